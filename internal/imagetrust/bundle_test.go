package imagetrust_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/tarball"
)

// TestImportChecksTheSignatureFirst: a bundle's image member is read only
// after its signature verified. A bundle signed by a key the trust file
// does not list, whose image member declares 16 GiB it does not hold, is
// refused for the signature, with nothing written; the same with a
// trusted signature gets as far as the image, and is refused as
// truncated. A bundle whose members are out of Export's order is refused
// before anything is read. No engine is needed: none is reached.
func TestImportChecksTheSignatureFirst(t *testing.T) {
	built, _ := fakeHome(t)
	_, key := opensslKey(t)
	_, other := opensslKey(t)
	h := layout.Home(built)
	pin, _ := os.ReadFile(h.ImagePin())
	sbom, _ := os.ReadFile(h.ImageSBOM())
	bundleSignedBy := func(signer string, order ...string) string {
		if _, _, err := imagetrust.Sign(built, map[string]*keys.Signer{"key": key, "other": other}[signer], digest.Of(sbom).String(), time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		sig, _ := os.ReadFile(h.ImageSignature())
		members := map[string][]byte{"image.json": pin, "sbom.cdx.json": sbom, "image.sig.dsse.json": sig}
		var b bytes.Buffer
		w := tarball.NewWriter(&b)
		for i, n := range order {
			if n == "image.tar" && i == len(order)-1 {
				// 16 GiB declared, 4 KiB there: the writer writes the
				// header and what it gets, then fails.
				w.Add(n, 16<<30, sandbox.LayerTime, bytes.NewReader(make([]byte, 4096)))
				continue
			}
			if err := w.AddBytes(n, sandbox.LayerTime, members[n]); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(t.TempDir(), "bundle.tar")
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	exportOrder := []string{"image.json", "sbom.cdx.json", "image.sig.dsse.json", "image.tar"}
	target := t.TempDir()
	trustPath := trustFile(t, t.TempDir(), key, `{"require_signature": true}`)
	leftovers := func(what string) {
		t.Helper()
		ents, _ := os.ReadDir(layout.Home(target).Sandbox())
		if len(ents) != 0 {
			t.Errorf("%s: the target's sandbox folder holds %d entries after a refusal", what, len(ents))
		}
	}

	_, err := imagetrust.Import(context.Background(), nil, target, bundleSignedBy("other", exportOrder...), trustPath, time.Now())
	wantCode(t, "untrusted signature, 16 GiB image", err, exitcode.Integrity, "not signed by a trusted key")
	leftovers("untrusted signature")

	_, err = imagetrust.Import(context.Background(), nil, target, bundleSignedBy("key", exportOrder...), trustPath, time.Now())
	wantCode(t, "trusted signature, truncated image", err, exitcode.Integrity, "truncated")
	leftovers("truncated image")

	_, err = imagetrust.Import(context.Background(), nil, target, bundleSignedBy("key", "image.tar", "image.json", "sbom.cdx.json", "image.sig.dsse.json"), trustPath, time.Now())
	wantCode(t, "image first", err, exitcode.Integrity, `member "image.tar" where "image.json" belongs`)
	leftovers("image first")
}

package imagetrust

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/tarball"
	"github.com/reprolab/repro/internal/trust"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

func fuzzPin() *sandbox.Pin {
	return &sandbox.Pin{
		Image:     sandbox.Image{ID: digest.Of([]byte("c")).String(), ManifestDigest: digest.Of([]byte("m")).String(), SBOMDigest: digest.Of([]byte("s")).String()},
		Reference: sandbox.ImageRepository + ":fuzz", LayerDigest: digest.Of([]byte("l")).String(),
	}
}

// FuzzVerifySignature: any bytes as a signature file give an answer,
// never a panic; an accepted one names exactly the wanted image and SBOM.
func FuzzVerifySignature(f *testing.F) {
	k, err := keys.FromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	kb, _ := json.Marshal(trust.File{Version: 1, Keys: []trust.Key{trust.NewKey("k", k.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)}})
	tf, err := trust.Parse(kb)
	if err != nil {
		f.Fatal(err)
	}
	pin := fuzzPin()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	payload, err := Statement(pin, pin.SBOMDigest, now)
	if err != nil {
		f.Fatal(err)
	}
	es, _ := dsse.NewEnvelopeSigner(k)
	env, err := es.SignPayload(f.Context(), PayloadType, payload)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(env)
	f.Add(good)
	f.Add([]byte(`{"payloadType": "application/vnd.in-toto+json", "payload": "", "signatures": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "sig.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := VerifySignature(tf, p, pin.ID, pin.ManifestDigest, pin.SBOMDigest, now)
		if err != nil {
			if exitcode.Of(err) != exitcode.Integrity {
				t.Fatalf("a refusal that is not exit 4: %v", err)
			}
			return
		}
		if s.Predicate.ImageID != pin.ID || s.Predicate.SBOMDigest != pin.SBOMDigest {
			t.Fatalf("accepted a signature for %+v", s.Predicate)
		}
	})
}

// FuzzUnpackBundle: any bytes as a bundle give an answer, never a panic;
// what it returns holds only the three known small members.
func FuzzUnpackBundle(f *testing.F) {
	var b bytes.Buffer
	tw := tarball.NewWriter(&b)
	for _, m := range []string{bundlePin, bundleSBOM, bundleSignature, bundleImage} {
		tw.AddBytes(m, sandbox.LayerTime, []byte("{}"))
	}
	tw.Close()
	f.Add(b.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "bundle.tar")
		if err := os.WriteFile(p, in, 0o600); err != nil {
			t.Fatal(err)
		}
		small, err := unpackBundle(p, filepath.Join(dir, "image.tar"))
		if err != nil {
			return
		}
		for n := range small {
			if n != bundlePin && n != bundleSBOM && n != bundleSignature {
				t.Fatalf("unpacked member %q", n)
			}
		}
	})
}

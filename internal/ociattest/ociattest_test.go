package ociattest_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/ociattest"
	"github.com/reprolab/repro/internal/ociattest/ociattesttest"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
)

func trustFor(t testing.TB, k *keys.Signer) *trust.File {
	t.Helper()
	kb, _ := json.Marshal([]trust.Key{trust.NewKey("lab-images", k.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)})
	tf, err := trust.Parse([]byte(`{"version": 1, "keys": ` + string(kb) + `, "image": {"profile": "production"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func key(t testing.TB) *keys.Signer {
	t.Helper()
	k, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// attest signs img and attaches its SBOM an hour before scanned, and a
// scan made at scanned.
func attest(t *testing.T, img *ociattest.Image, k *keys.Signer, tf *trust.File, scheme ociattest.Scheme, scanned time.Time) {
	t.Helper()
	now := scanned.Add(-time.Hour)
	if _, err := ociattest.Sign(img, k, scheme, now); err != nil {
		t.Fatalf("sign: %v", err)
	}
	if _, _, n, err := ociattest.AttachSBOM(img, k, scheme, now); err != nil || n != 2 {
		t.Fatalf("sbom: %d packages, %v", n, err)
	}
	feed, err := vulnscan.LoadFeed(ociattesttest.Feed(t))
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := ociattest.AttachScan(img, ociattest.ScanInput{Trust: tf, Signer: k, Feed: feed, Ecosystem: "Debian:12", Scheme: scheme, Now: scanned})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if p.Unwaived != 1 || p.MaxUnwaivedSeverity != "medium" || p.Findings[0].Package != "zlib" {
		t.Fatalf("scan found %+v", p)
	}
}

func verify(t *testing.T, img *ociattest.Image, tf *trust.File, now time.Time) (*ociattest.Verified, ociattest.Evidence, error) {
	t.Helper()
	found, err := img.Envelopes()
	if err != nil {
		return nil, nil, err
	}
	return ociattest.Verify(tf, ociattest.PolicyOf(tf.Image), img.Digest, found, now)
}

func wantCode(t *testing.T, what string, err error, code exitcode.Code, msg string) {
	t.Helper()
	if err == nil || exitcode.Of(err) != code || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: got exit %d (%v), want exit %d with %q", what, exitcode.Of(err), err, code, msg)
	}
}

// TestLayoutAttestations signs an OCI layout image, attaches its SBOM and
// a scan, in each scheme, and verifies them under the production profile;
// then what an attacker would try: no signature, a key the trust file does
// not list, a stale scan, attestations of another image attached to this
// one, a scan of another SBOM, an envelope whose bytes were changed in the
// layout.
func TestLayoutAttestations(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	k := key(t)
	tf := trustFor(t, k)
	for _, scheme := range []ociattest.Scheme{ociattest.Referrers, ociattest.Cosign} {
		t.Run(string(scheme), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			dg := ociattesttest.Layout(t, dir, ociattesttest.Image(t, ociattesttest.Status, "a"))
			img, err := ociattest.Open(ctx, "registry.example/lab/dlrm@"+dg, dir)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = verify(t, img, tf, now)
			wantCode(t, "unsigned", err, exitcode.Integrity, "carries no signature")
			attest(t, img, k, tf, scheme, now.Add(-time.Hour))
			v, ev, err := verify(t, img, tf, now)
			if err != nil {
				t.Fatal(err)
			}
			if v.Signature == nil || v.SBOM == nil || v.Scan == nil || v.Scan.SBOMDigest != v.SBOM.Digest || v.SBOM.Packages != 2 || len(ev) != 3 {
				t.Fatalf("verified %+v, %d envelopes", v, len(ev))
			}
			// The evidence alone verifies again.
			var again []ociattest.Found
			for _, b := range ev {
				again = append(again, ociattest.Found{Where: "evidence", Envelope: b})
			}
			if _, _, err := ociattest.Verify(tf, ociattest.PolicyOf(tf.Image), img.Digest, again, now); err != nil {
				t.Errorf("evidence: %v", err)
			}

			// Wrongly signed: a key the trust file does not list.
			other := key(t)
			_, _, err = verify(t, img, trustFor(t, other), now)
			wantCode(t, "untrusted key", err, exitcode.Integrity, "not signed by a trusted key")

			// Stale: eight days later the only scan is too old.
			_, _, err = verify(t, img, tf, now.Add(8*24*time.Hour))
			wantCode(t, "stale scan", err, exitcode.Precondition, "stale")

			// Digest swapped: image b carries a's attestations.
			bdir := filepath.Join(t.TempDir(), "b")
			bdg := ociattesttest.Layout(t, bdir, ociattesttest.Image(t, ociattesttest.Status, "b"))
			b, _ := ociattest.Open(ctx, "registry.example/lab/dlrm@"+bdg, bdir)
			for _, kind := range ociattest.Kinds {
				if _, err := b.Attach(ev[kind], kind, scheme); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err = verify(t, b, tf, now)
			wantCode(t, "digest swapped", err, exitcode.Integrity, "names another image")

			// A scan of another SBOM: b's own signature and SBOM, a's scan.
			if _, err := ociattest.Sign(b, k, scheme, now); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := ociattest.AttachSBOM(b, k, scheme, now); err != nil {
				t.Fatal(err)
			}
			_, _, err = verify(t, b, tf, now)
			wantCode(t, "scan of another image", err, exitcode.Integrity, "names another image")
		})
	}
}

// TestLayoutTamperedEnvelope changes the bytes of an attached envelope in
// the layout: the blob no longer hashes to its name.
func TestLayoutTamperedEnvelope(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	k := key(t)
	dir := t.TempDir()
	dg := ociattesttest.Layout(t, dir, ociattesttest.Image(t, ociattesttest.Status, "a"))
	img, _ := ociattest.Open(ctx, "lab/dlrm@"+dg, dir)
	where, err := ociattest.Sign(img, k, ociattest.Referrers, now)
	if err != nil {
		t.Fatal(err)
	}
	found, err := img.Envelopes()
	if err != nil || len(found) != 1 {
		t.Fatalf("%d envelopes (%s), %v", len(found), where, err)
	}
	var env map[string]any
	json.Unmarshal(found[0].Envelope, &env)
	blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "sha256", "*"))
	n := 0
	for _, p := range blobs {
		if b, _ := os.ReadFile(p); string(b) == string(found[0].Envelope) {
			os.WriteFile(p, []byte(strings.Replace(string(b), `"keyid"`, `"keyid" `, 1)), 0o644)
			n++
		}
	}
	if n != 1 {
		t.Fatalf("found the envelope blob %d times", n)
	}
	_, err = img.Envelopes()
	wantCode(t, "tampered blob", err, exitcode.Integrity, "does not hash to its name")
}

// TestRegistryAttestations pushes the image to a real registry on
// loopback (go-containerregistry's, in process), with and without the
// referrers API (then the fallback tag holds the list), attaches in both
// schemes over HTTP, and verifies.
func TestRegistryAttestations(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	k := key(t)
	tf := trustFor(t, k)
	for _, api := range []bool{true, false} {
		for _, scheme := range []ociattest.Scheme{ociattest.Referrers, ociattest.Cosign} {
			srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(api), registry.Logger(log.New(io.Discard, "", 0))))
			host := strings.TrimPrefix(srv.URL, "http://")
			src := ociattesttest.Image(t, ociattesttest.Status, "registry")
			tag, _ := name.NewTag(host + "/lab/dlrm:v1")
			if err := remote.Write(tag, src); err != nil {
				t.Fatal(err)
			}
			dg, _ := src.Digest()
			img, err := ociattest.Open(ctx, host+"/lab/dlrm@"+dg.String(), "")
			if err != nil {
				t.Fatal(err)
			}
			attest(t, img, k, tf, scheme, now.Add(-time.Hour))
			v, _, err := verify(t, img, tf, now)
			if err != nil || v.Signature == nil || v.Scan == nil {
				t.Errorf("referrers API %v, %s: %+v, %v", api, scheme, v, err)
			}
			_, _, err = verify(t, img, tf, now.Add(8*24*time.Hour))
			wantCode(t, "stale over the registry", err, exitcode.Precondition, "stale")
			missing, _ := ociattest.Open(ctx, host+"/lab/dlrm@sha256:"+strings.Repeat("0", 64), "")
			if _, _, err := missing.Manifest(); exitcode.Of(err) != exitcode.Precondition {
				t.Errorf("a missing image: %v", err)
			}
			srv.Close()
		}
	}
}

package handoff

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

// productionTrust writes a trust file with the production profile that
// lists k for images.
func productionTrust(t *testing.T, k *keys.Signer) *ImageTrust {
	t.Helper()
	kb, _ := json.Marshal([]trust.Key{trust.NewKey("lab-images", k.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)})
	p := filepath.Join(t.TempDir(), "trust.json")
	if err := os.WriteFile(p, []byte(`{"version": 1, "keys": `+string(kb)+`, "image": {"profile": "production"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tf, err := trust.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return &ImageTrust{File: tf, Path: p}
}

// attestImage signs img with k, attaches its SBOM and a scan made at
// scanned (the signature and SBOM an hour before), all with repro's own
// code.
func attestImage(t *testing.T, img *ociattest.Image, k *keys.Signer, it *ImageTrust, scanned time.Time) {
	t.Helper()
	made := scanned.Add(-time.Hour)
	if _, err := ociattest.Sign(img, k, ociattest.Referrers, made); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ociattest.AttachSBOM(img, k, ociattest.Referrers, made); err != nil {
		t.Fatal(err)
	}
	feed, err := vulnscan.LoadFeed(ociattesttest.Feed(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ociattest.AttachScan(img, ociattest.ScanInput{Trust: it.File, Signer: k, Feed: feed, Ecosystem: "Debian:12", Scheme: ociattest.Referrers, Now: scanned}); err != nil {
		t.Fatal(err)
	}
}

// handoffRefused runs a DLRM handoff that must be refused with code and a
// message holding msg, leaving no bundle.
func handoffRefused(t *testing.T, w *world, it *ImageTrust, code exitcode.Code, msg string) {
	t.Helper()
	w.reparse(t)
	o := w.opts(TargetSlurm)
	o.Trust = it
	p, err := Handoff(context.Background(), o, w.out, false)
	if exitcode.Of(err) != code || p == nil {
		t.Fatalf("want exit %d, got %v", code, err)
	}
	lines := ""
	for _, r := range p.Failed() {
		lines += r.Line() + "\n"
	}
	if !strings.Contains(lines, msg) {
		t.Errorf("the refusal does not say %q:\n%s", msg, lines)
	}
	if _, err := os.Stat(w.out); !os.IsNotExist(err) {
		t.Errorf("a refused handoff wrote %s", w.out)
	}
}

// TestHandoffSignedImageLayout builds a small OCI layout image here, signs
// it and attaches an SBOM and a scan with repro, and plans a DLRM handoff
// against it under the production profile. Unsigned, wrongly signed,
// stale-scan and digest-swapped images are each refused with nothing
// written; the admitted bundle records what was verified and keeps the
// envelopes, which verify again, and a changed envelope is found.
func TestHandoffSignedImageLayout(t *testing.T) {
	ctx := context.Background()
	k, _ := keys.Generate()
	it := productionTrust(t, k)
	w := newDLRMWorld(t)
	now := w.opts(TargetSlurm).Now()
	dir := filepath.Join(t.TempDir(), "layout")
	dg := ociattesttest.Layout(t, dir, ociattesttest.Image(t, ociattesttest.Status, "dlrm runtime"))
	ref := "registry.example/mlperf/dlrm@" + dg
	w.cfg.Image, w.cfg.ImageLayout = ref, dir

	handoffRefused(t, w, it, exitcode.Integrity, "carries no signature")
	img, err := ociattest.Open(ctx, ref, dir)
	if err != nil {
		t.Fatal(err)
	}

	// Wrongly signed: every attestation by a key the trust file lacks.
	wrong, _ := keys.Generate()
	attestImage(t, img, wrong, productionTrust(t, wrong), now.Add(-time.Hour))
	handoffRefused(t, w, it, exitcode.Integrity, "not signed by a trusted key")

	// Stale: the trusted key's scan is eight days old.
	attestImage(t, img, k, it, now.Add(-8*24*time.Hour))
	handoffRefused(t, w, it, exitcode.Precondition, "stale")

	// Digest swapped: another image in the same layout carries this
	// image's (good, fresh) attestations; the configuration names it.
	fresh := filepath.Join(t.TempDir(), "fresh")
	fdg := ociattesttest.Layout(t, fresh, ociattesttest.Image(t, ociattesttest.Status, "dlrm runtime"))
	if fdg != dg {
		t.Fatal("the same image built twice differs")
	}
	fimg, _ := ociattest.Open(ctx, ref, fresh)
	attestImage(t, fimg, k, it, now.Add(-time.Hour))
	found, _ := fimg.Envelopes()
	other := ociattesttest.Image(t, ociattesttest.Status, "another runtime")
	odg, _ := other.Digest()
	sw := filepath.Join(t.TempDir(), "swapped")
	ociattesttest.Layout(t, sw, other)
	simg, _ := ociattest.Open(ctx, "registry.example/mlperf/dlrm@"+odg.String(), sw)
	for _, f := range found {
		if _, err := simg.Attach(f.Envelope, ociattest.Signature, ociattest.Referrers); err != nil {
			t.Fatal(err)
		}
	}
	w.cfg.Image, w.cfg.ImageLayout = simg.Ref.String(), sw
	handoffRefused(t, w, it, exitcode.Integrity, "names another image")
	// A configuration naming a digest the layout does not hold.
	w.cfg.Image, w.cfg.ImageLayout = simg.Ref.String(), fresh
	handoffRefused(t, w, it, exitcode.Precondition, "holds no image")

	// Admitted: fresh scan, trusted key.
	w.cfg.Image, w.cfg.ImageLayout = ref, fresh
	w.reparse(t)
	o := w.opts(TargetSlurm)
	o.Trust = it
	p, err := Handoff(ctx, o, w.out, false)
	if err != nil {
		t.Fatalf("admitted image refused: %v %+v", err, p.Failed())
	}
	v := p.Manifest.ImageVerification
	if v == nil || v.Policy != "production" || v.Verified == nil || v.Verified.Signature == nil || v.Verified.SBOM == nil || v.Verified.Scan == nil || len(v.Evidence) != 3 {
		t.Fatalf("recorded %+v", v)
	}
	m, err := VerifyBundle(w.out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyImageEvidence(w.out, m, it.File); err != nil {
		t.Fatalf("the kept evidence does not verify again: %v", err)
	}
	if _, err := VerifyImageEvidence(w.out, m, productionTrust(t, wrong).File); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("evidence checked against a trust file without the signer: %v", err)
	}
	if _, err := VerifyImageEvidence(w.out, m, nil); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("evidence without a trust file: %v", err)
	}
	readme := string(must(os.ReadFile(filepath.Join(w.out, ReadmeFile))))
	if !strings.Contains(readme, "policy\n**production**") || !strings.Contains(readme, "image/signature.dsse.json") {
		t.Errorf("the README does not state the image verification:\n%s", readme)
	}
	sb := string(must(os.ReadFile(filepath.Join(w.out, SbatchFile))))
	if !strings.Contains(sb, "@"+dg) || strings.Contains(sb, ":latest") {
		t.Errorf("the batch script does not name the image by digest only")
	}
	// A changed envelope: the bundle no longer verifies.
	sig := filepath.Join(w.out, "image", "signature.dsse.json")
	writeFile(t, sig, append(must(os.ReadFile(sig)), ' '), 0o644)
	if _, err := VerifyBundle(w.out); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "signature.dsse.json differs") {
		t.Errorf("changed envelope: %v", err)
	}
}

// TestHandoffSignedImageRegistry does the admitted case over HTTP: the
// image is pushed to a registry on loopback (go-containerregistry's,
// with the referrers API), attested there and read back by the handoff.
func TestHandoffSignedImageRegistry(t *testing.T) {
	ctx := context.Background()
	k, _ := keys.Generate()
	it := productionTrust(t, k)
	w := newDLRMWorld(t)
	now := w.opts(TargetSlurm).Now()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	src := ociattesttest.Image(t, ociattesttest.Status, "dlrm runtime")
	tag, _ := name.NewTag(host + "/mlperf/dlrm:v1")
	if err := remote.Write(tag, src); err != nil {
		t.Fatal(err)
	}
	dg, _ := src.Digest()
	ref := host + "/mlperf/dlrm@" + dg.String()
	w.cfg.Image = ref
	handoffRefused(t, w, it, exitcode.Integrity, "carries no signature")
	img, err := ociattest.Open(ctx, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	attestImage(t, img, k, it, now.Add(-time.Hour))
	w.reparse(t)
	o := w.opts(TargetSlurm)
	o.Trust = it
	p, err := Handoff(ctx, o, w.out, false)
	if err != nil {
		t.Fatalf("%v %+v", err, p.Failed())
	}
	if v := p.Manifest.ImageVerification; v == nil || v.Verified == nil || !strings.HasPrefix(v.Store, "registry 127.0.0.1:") {
		t.Errorf("recorded %+v", v)
	}
}

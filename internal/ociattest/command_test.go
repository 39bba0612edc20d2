package ociattest_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/ociattest"
	"github.com/reprolab/repro/internal/ociattest/ociattesttest"
	"github.com/reprolab/repro/internal/trust"
)

// TestAttachAndVerifyImage: Attach refuses a bad scheme, an unusable key
// and a scan without a feed (before the trust file is read), returns the
// trust file's error with nothing attached, and then signs, attaches an
// SBOM and a scan whose unwaived finding is the verdict; VerifyImage
// reads the trust file before the image, refuses an image the layout
// lacks (exit 3) and the unsigned image (exit 4), and
// admits the attested one.
func TestAttachAndVerifyImage(t *testing.T) {
	ctx := context.Background()
	k := key(t)
	tf := trustFor(t, k)
	kp := filepath.Join(t.TempDir(), "image.key")
	if err := keys.WritePrivate(kp, k); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	ref := "registry.example/runtime@" + ociattesttest.Layout(t, dir, ociattesttest.Image(t, ociattesttest.Status, "cmd"))
	now := time.Now().UTC()
	called := 0
	trustOK := func() (*trust.File, error) { called++; return tf, nil }
	errNoTrust := exitcode.Errorf(exitcode.Precondition, "no trust file")
	noTrust := func() (*trust.File, error) { called++; return nil, errNoTrust }
	req := func(what string) ociattest.AttachRequest {
		return ociattest.AttachRequest{What: what, Ref: ref, Layout: dir, KeyPath: kp, Scheme: string(ociattest.Referrers),
			Feed: ociattesttest.Feed(t), Ecosystem: "Debian:12", Trust: trustOK, Now: now}
	}

	r := req("sign")
	r.Scheme = "bogus"
	if _, err := ociattest.Attach(ctx, r); err == nil {
		t.Error("a bogus scheme was taken")
	}
	r = req("sign")
	r.KeyPath = filepath.Join(t.TempDir(), "nope.key")
	if _, err := ociattest.Attach(ctx, r); exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "cannot be used") {
		t.Errorf("a missing key: %v", err)
	}
	r = req("scan")
	r.Feed = ""
	if _, err := ociattest.Attach(ctx, r); exitcode.Of(err) != exitcode.Usage || called != 0 {
		t.Errorf("a scan without a feed: %v, trust read %d times", err, called)
	}
	r = req("scan")
	r.Trust = noTrust
	if _, err := ociattest.Attach(ctx, r); !errors.Is(err, errNoTrust) {
		t.Errorf("a scan without a trust file: %v", err)
	}
	if _, err := ociattest.VerifyImage(ctx, noTrust, "not a reference", dir, now); !errors.Is(err, errNoTrust) {
		t.Errorf("verify without a trust file: %v, want the trust file's error first", err)
	}
	absent := "registry.example/runtime@sha256:" + strings.Repeat("0", 64)
	if _, err := ociattest.VerifyImage(ctx, trustOK, absent, dir, now); exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "holds no image") {
		t.Errorf("verify of an image the layout lacks: %v (exit %d), want exit 3", err, exitcode.Of(err))
	}
	if _, err := ociattest.VerifyImage(ctx, trustOK, ref, dir, now); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("verify of an unsigned image: %v (exit %d), want exit 4", err, exitcode.Of(err))
	}

	for _, what := range []string{"sign", "sbom", "scan"} {
		a, err := ociattest.Attach(ctx, req(what))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if a.Kind != what || a.Where == "" || a.KeyID != keys.ID(k.PublicKey()) || a.Image != ref || !strings.Contains(a.Store, dir) {
			t.Errorf("%s: %+v", what, a)
		}
		v := a.Verdict()
		switch what {
		case "sbom":
			if a.SBOM == "" || a.Packages == 0 || v != nil {
				t.Errorf("sbom: %+v, verdict %v", a, v)
			}
		case "scan": // the feed's zlib advisory is unwaived
			if a.Scan == nil || a.SBOM != a.Scan.SBOMDigest || exitcode.Of(v) != exitcode.Negative {
				t.Errorf("scan: %+v, verdict %v", a, v)
			}
		}
	}
	v, err := ociattest.VerifyImage(ctx, trustOK, ref, dir, now.Add(time.Minute))
	if err != nil || v.Image != ref || v.Signature == nil || v.Scan == nil {
		t.Fatalf("verify of the attested image: %v %+v", err, v)
	}
}

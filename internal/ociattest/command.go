package ociattest

import (
	"context"
	"fmt"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
)

// AttachRequest says what Attach attaches to which image.
type AttachRequest struct {
	// What is "sign", "sbom" or "scan".
	What string
	// Ref is the image (name@sha256:<hex>), Layout the OCI image layout
	// folder that holds it ("" for the registry Ref names).
	Ref, Layout string
	// KeyPath is the image key that signs what is attached; Scheme how it
	// is attached (ParseScheme).
	KeyPath, Scheme string
	// For "scan": the OSV feed folder, the ecosystem of the image's
	// packages, the waivers file ("" for none), and the trust file whose
	// image keys must have signed the SBOM that is scanned.
	Feed, Ecosystem, Waivers string
	Trust                    func() (*trust.File, error)
	Now                      time.Time
}

// Attached is what Attach attached.
type Attached struct {
	Image    string              `json:"image"`
	Store    string              `json:"store"`
	Kind     string              `json:"kind"`
	Where    string              `json:"attached_as"`
	KeyID    string              `json:"key_id"`
	SBOM     string              `json:"sbom_digest,omitempty"`
	Packages int                 `json:"packages,omitempty"`
	Scan     *vulnscan.Predicate `json:"scan,omitempty"`
}

// Attach signs r.Ref (Sign), or attaches its SBOM (AttachSBOM) or a scan
// of it (AttachScan), with the key at r.KeyPath. It checks, in this
// order and before anything is attached: the scheme; the key (exit 3
// when it cannot be used); the image reference and layout (Open); for a
// scan, that a feed is named (exit 2), then the trust file, the waivers
// and the feed. A scan with unwaived findings is attached all the same;
// Verdict says so.
func Attach(ctx context.Context, r AttachRequest) (*Attached, error) {
	sc, err := ParseScheme(r.Scheme)
	if err != nil {
		return nil, err
	}
	k, err := keys.LoadPrivate(r.KeyPath)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the image key %q cannot be used: %v", r.KeyPath, err)
	}
	img, err := Open(ctx, r.Ref, r.Layout)
	if err != nil {
		return nil, err
	}
	id, _ := k.KeyID()
	out := &Attached{Image: img.Ref.String(), Store: img.String(), Kind: r.What, KeyID: id}
	switch r.What {
	case "sign":
		out.Where, err = Sign(img, k, sc, r.Now)
	case "sbom":
		var d digest.SHA256
		out.Where, d, out.Packages, err = AttachSBOM(img, k, sc, r.Now)
		out.SBOM = d.String()
	case "scan":
		if r.Feed == "" {
			return nil, exitcode.Errorf(exitcode.Usage, "--osv DIR is required: a folder of OSV records for %s", r.Ecosystem)
		}
		tf, terr := r.Trust()
		if terr != nil {
			return nil, terr
		}
		var ws []vulnscan.Waiver
		if r.Waivers != "" {
			if ws, err = vulnscan.LoadWaivers(r.Waivers, r.Now); err != nil {
				return nil, err
			}
		}
		feed, ferr := vulnscan.LoadFeed(r.Feed)
		if ferr != nil {
			return nil, ferr
		}
		out.Where, out.Scan, err = AttachScan(img, ScanInput{Trust: tf, Signer: k, Feed: feed, Ecosystem: r.Ecosystem, Waivers: ws, Scheme: sc, Now: r.Now})
		if out.Scan != nil {
			out.SBOM = out.Scan.SBOMDigest
		}
	default:
		return nil, fmt.Errorf("ociattest: nothing to attach called %q", r.What)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Verdict is nil unless a scan was attached with unwaived findings: then
// an exit 1 error naming their count and highest severity.
func (a *Attached) Verdict() error {
	if p := a.Scan; p != nil && p.Unwaived > 0 {
		return exitcode.Errorf(exitcode.Negative, "%d unwaived finding(s), highest severity %s (the scan is attached; the trust file's max_severity decides)", p.Unwaived, p.MaxUnwaivedSeverity)
	}
	return nil
}

// VerifyImage applies the image policy of the trust file loadTrust
// returns (called first, once) to the attestations attached to ref in
// the layout folder dir ("" for the registry ref names), as Verify judges
// them at now. The image's manifest must be readable before its
// attestations are read.
func VerifyImage(ctx context.Context, loadTrust func() (*trust.File, error), ref, dir string, now time.Time) (*Verified, error) {
	tf, err := loadTrust()
	if err != nil {
		return nil, err
	}
	img, err := Open(ctx, ref, dir)
	if err != nil {
		return nil, err
	}
	if _, _, err := img.Manifest(); err != nil {
		return nil, err
	}
	found, err := img.Envelopes()
	if err != nil {
		return nil, err
	}
	v, _, err := Verify(tf, PolicyOf(tf.Image), img.Digest, found, now)
	if err != nil {
		return nil, err
	}
	v.Image, v.Store = img.Ref.String(), img.String()
	return v, nil
}

package handoff

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/ociattest"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/trust"
)

// ImageVerification is what was checked of the runtime image against the
// trust file's image policy before the bundle was written. Under a policy
// that requires nothing (or without a trust file) Policy is "none".
type ImageVerification struct {
	// Policy is "none", "custom" or the profile ("production").
	Policy          string           `json:"policy"`
	TrustFile       string           `json:"trust_file,omitempty"`
	TrustFileDigest string           `json:"trust_file_digest,omitempty"`
	Requirements    ociattest.Policy `json:"requirements"`
	// Store is where the image and its attestations were read: the
	// registry, or the OCI layout folder (config image_layout).
	Store    string              `json:"store,omitempty"`
	Verified *ociattest.Verified `json:"verified,omitempty"`
	// Evidence are the bundle files holding the envelopes that met the
	// policy, with their SHA-256; 'repro handoff verify' checks them again.
	Evidence []EvidenceFile `json:"evidence,omitempty"`
}

// EvidenceFile is one attestation envelope kept in the bundle.
type EvidenceFile struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// evidenceName is the bundle file of an envelope of kind.
func evidenceName(k ociattest.Kind) string {
	switch k {
	case ociattest.Signature:
		return "image/signature.dsse.json"
	case ociattest.SBOM:
		return "image/sbom.dsse.json"
	}
	return "image/scan.dsse.json"
}

// ImageTrust is the trust file a handoff applies to its runtime image.
type ImageTrust struct {
	File *trust.File
	Path string
}

func policyName(tf *trust.File) string {
	if tf.Image.Profile != "" {
		return tf.Image.Profile
	}
	return "custom"
}

// checkImageTrust applies the trust file's image policy to the image ref
// (name@sha256): its signature, SBOM and scan, read from the registry or
// from the OCI layout the configuration names, must meet it.
func (p *planner) checkImageTrust(ctx context.Context, ref ImageRef) {
	it := p.opts.Trust
	v := &ImageVerification{Policy: "none"}
	p.m.ImageVerification = v
	if it == nil || it.File == nil {
		return
	}
	v.TrustFile = it.Path
	pol := ociattest.PolicyOf(it.File.Image)
	if pol.None() {
		return
	}
	v.Policy, v.Requirements = policyName(it.File), pol
	if d, _, err := digest.File(it.Path); err == nil {
		v.TrustFileDigest = d.String()
	}
	img, err := ociattest.Open(ctx, ref.String(), p.cfg.ImageLayout)
	if err != nil {
		p.imageRefused(err)
		return
	}
	v.Store = img.String()
	if _, _, err := img.Manifest(); err != nil {
		p.imageRefused(err)
		return
	}
	found, err := img.Envelopes()
	if err != nil {
		p.imageRefused(err)
		return
	}
	ver, ev, err := ociattest.Verify(it.File, pol, img.Digest, found, p.opts.Now())
	if err != nil {
		p.imageRefused(err)
		return
	}
	ver.Image, ver.Store = ref.String(), img.String()
	v.Verified = ver
	p.evidence = map[string][]byte{}
	for _, k := range ociattest.Kinds {
		if b, ok := ev[k]; ok {
			n := evidenceName(k)
			p.evidence[n] = b
			v.Evidence = append(v.Evidence, EvidenceFile{Kind: string(k), File: n, SHA256: digest.Of(b).Hex()})
		}
	}
}

func (p *planner) imageRefused(err error) {
	what := fmt.Sprintf("the trust file %s (policy %s) refuses the image: %v", p.opts.Trust.Path, policyName(p.opts.Trust.File), err)
	if exitcode.Of(err) == exitcode.Integrity {
		p.mismatch("%s", what)
		return
	}
	p.fail("%s", what)
}

// checkEvidence reads the evidence files a manifest lists from dir and
// checks their digests.
func checkEvidence(dir string, m *Manifest) (map[string][]byte, error) {
	out := map[string][]byte{}
	v := m.ImageVerification
	if v == nil {
		return out, nil
	}
	for _, e := range v.Evidence {
		if !slices.Contains([]string{evidenceName(ociattest.Signature), evidenceName(ociattest.SBOM), evidenceName(ociattest.Scan)}, e.File) {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: the manifest lists evidence %q, which repro does not write", dir, clip(e.File))
		}
		b, err := safefile.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)), 64<<20)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: %s: %v", dir, e.File, errText(err))
		}
		if digest.Of(b).Hex() != e.SHA256 {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: %s differs from the envelope the manifest records: it was changed after repro handoff wrote it", dir, e.File)
		}
		out[e.File] = b
	}
	return out, nil
}

// VerifyImageEvidence verifies again, against tf, the attestations a
// bundle keeps of its runtime image: the policy recorded in the manifest
// applied to the kept envelopes as of the time the bundle was made, with
// the same signers and SBOM as recorded. A bundle made without a policy
// returns its record unchanged.
func VerifyImageEvidence(dir string, m *Manifest, tf *trust.File) (*ImageVerification, error) {
	v := m.ImageVerification
	if v == nil || v.Policy == "none" {
		return v, nil
	}
	if tf == nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "bundle %s: its image was admitted under a trust file (%s, policy %s); give one that lists the image keys with --trust FILE", dir, v.TrustFile, v.Policy)
	}
	files, err := checkEvidence(dir, m)
	if err != nil {
		return nil, err
	}
	ref, err := ParseImageRef(m.Image)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: image %v", dir, err)
	}
	var found []ociattest.Found
	for _, e := range v.Evidence {
		found = append(found, ociattest.Found{Where: e.File, Envelope: files[e.File]})
	}
	again, _, err := ociattest.Verify(tf, v.Requirements, ref.Digest, found, m.CreatedAt.Add(time.Second))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: the image evidence no longer verifies: %w", dir, err)
	}
	rec := v.Verified
	same := rec != nil && sameSigner(rec.Signature, again.Signature)
	if same && rec.SBOM != nil {
		same = again.SBOM != nil && again.SBOM.Digest == rec.SBOM.Digest && sameSigner(&rec.SBOM.Checked, &again.SBOM.Checked)
	}
	if same && rec.Scan != nil {
		same = again.Scan != nil && sameSigner(&rec.Scan.Checked, &again.Scan.Checked)
	}
	if !same {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: the kept image evidence verifies, but not as the manifest records it", dir)
	}
	return v, nil
}

func sameSigner(a, b *ociattest.Checked) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.KeyID == b.KeyID && a.SignedAt.Equal(b.SignedAt) && a.Envelope == b.Envelope
}

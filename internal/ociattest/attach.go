package ociattest

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
)

// Sign attaches a signature of the image by signer, made at now, and
// returns where it was stored.
func Sign(img *Image, signer *keys.Signer, scheme Scheme, now time.Time) (string, error) {
	if _, _, err := img.Manifest(); err != nil {
		return "", err
	}
	env, err := Attest(signer, Signature, img.Ref.Context().Name(), img.Digest, SignaturePayload(img.Ref.String(), now))
	if err != nil {
		return "", err
	}
	return img.Attach(env, Signature, scheme)
}

// MakeSBOM describes the image's Debian packages (read from its layers) as
// CycloneDX 1.6 JSON, as the evaluator image's SBOM is made, stamped with
// now as its metadata.timestamp (the signing time of its attestation).
func MakeSBOM(img *Image, now time.Time) ([]byte, int, error) {
	pkgs, config, err := img.Packages()
	if err != nil {
		return nil, 0, err
	}
	b, err := sandbox.BuildImageSBOM(img.Ref.Context().Name(), sandbox.Image{ID: config, ManifestDigest: img.Digest.String()}, pkgs)
	if err != nil {
		return nil, 0, exitcode.Errorf(exitcode.Precondition, "the SBOM of %s: %v", img.Ref, err)
	}
	var doc map[string]any
	if err := strictjson.DecodeOpen(b, &doc); err != nil {
		return nil, 0, err
	}
	md, _ := doc["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		doc["metadata"] = md
	}
	md["timestamp"] = now.UTC().Truncate(time.Second).Format(time.RFC3339)
	out, err := json.Marshal(doc)
	return out, len(pkgs), err
}

// AttachSBOM makes the image's SBOM (MakeSBOM), signs it as an attestation
// with signer and attaches it; it returns where and the SBOM's digest.
func AttachSBOM(img *Image, signer *keys.Signer, scheme Scheme, now time.Time) (string, digest.SHA256, int, error) {
	sbom, n, err := MakeSBOM(img, now)
	if err != nil {
		return "", digest.SHA256{}, 0, err
	}
	env, err := Attest(signer, SBOM, img.Ref.Context().Name(), img.Digest, sbom)
	if err != nil {
		return "", digest.SHA256{}, 0, err
	}
	var c bytes.Buffer
	_ = json.Compact(&c, sbom)
	where, err := img.Attach(env, SBOM, scheme)
	return where, digest.Of(c.Bytes()), n, err
}

// ScanInput is what AttachScan matches and with which key it signs.
type ScanInput struct {
	Trust     *trust.File // verifies the attached SBOM before it is scanned
	Signer    *keys.Signer
	Feed      *vulnscan.Feed
	Ecosystem string
	Waivers   []vulnscan.Waiver
	Scheme    Scheme
	Now       time.Time
}

// AttachScan scans the image's newest attached SBOM that a key of in.Trust
// signed (with internal/vulnscan's matcher, as 'repro image scan' scans
// the evaluator image), signs the result with in.Signer and attaches it.
func AttachScan(img *Image, in ScanInput) (string, *vulnscan.Predicate, error) {
	found, err := img.Envelopes()
	if err != nil {
		return "", nil, err
	}
	_, ev, err := Verify(in.Trust, Policy{SBOM: true}, img.Digest, found, in.Now)
	if err != nil {
		return "", nil, err
	}
	o, err := open(in.Trust, ev[SBOM], img.Digest)
	if err != nil {
		return "", nil, err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, o.predicate); err != nil {
		return "", nil, err
	}
	debs, err := sandbox.SBOMPackages(c.Bytes())
	if err != nil {
		return "", nil, exitcode.Errorf(exitcode.Precondition, "the SBOM attached to %s: %v", img.Ref, err)
	}
	mb, _, err := img.Manifest()
	if err != nil {
		return "", nil, err
	}
	var m struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
	}
	if err := strictjson.DecodeOpen(mb, &m); err != nil {
		return "", nil, exitcode.Errorf(exitcode.Integrity, "the manifest of %s: %v", img.Ref, err)
	}
	pkgs := make([]vulnscan.InstalledPackage, len(debs))
	for i, d := range debs {
		pkgs[i] = vulnscan.InstalledPackage(d)
	}
	st, err := vulnscan.Scan(vulnscan.Input{ImageID: m.Config.Digest, ManifestDigest: img.Digest.String(), SBOMDigest: digest.Of(c.Bytes()),
		Packages: pkgs, Feed: in.Feed, Ecosystem: in.Ecosystem, Waivers: in.Waivers, Now: in.Now})
	if err != nil {
		return "", nil, err
	}
	pb, err := json.Marshal(st.Predicate)
	if err != nil {
		return "", nil, err
	}
	env, err := Attest(in.Signer, Scan, img.Ref.Context().Name(), img.Digest, pb)
	if err != nil {
		return "", nil, err
	}
	where, err := img.Attach(env, Scan, in.Scheme)
	return where, &st.Predicate, err
}

// Package ociattest signs OCI images by digest and attaches to them what a
// production handoff requires: a signature, an SBOM and a vulnerability
// scan, each an in-toto Statement v1 about the image's manifest digest in a
// DSSE envelope signed with an image key (a key the trust file lists for
// "images"). It stores and reads them where registries keep them, as OCI
// 1.1 referrers (artifact manifests whose subject is the image, found
// through the referrers API or its fallback tag) or in cosign's tag scheme
// (the tag sha256-<hex>.att, one envelope per layer), in a registry
// through go-containerregistry or in an OCI image layout folder for
// offline use; and it verifies them against the trust file's image
// policy (Verify).
package ociattest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// DSSE, in-toto and OCI names.
const (
	PayloadType   = "application/vnd.in-toto+json"
	StatementType = "https://in-toto.io/Statement/v1"
	// EnvelopeMediaType is the media type of a layer holding one DSSE
	// envelope, and the artifact type of a referrer that holds one.
	EnvelopeMediaType = "application/vnd.dsse.envelope.v1+json"
	// PredicateAnnotation names an envelope layer's predicate type (the
	// annotation cosign writes on its attestation layers).
	PredicateAnnotation = "predicateType"
)

// Kind is what an attestation states about an image.
type Kind string

// The kinds and their predicate types.
const (
	// Signature: a key vouches for the image (predicate SignaturePredicate).
	Signature Kind = "https://github.com/reprolab/repro/attestation/runtime-image/v1"
	// SBOM: the image's bill of materials; the predicate is a CycloneDX
	// JSON document whose metadata.timestamp is the signing time.
	SBOM Kind = "https://cyclonedx.org/bom"
	// Scan: the SBOM matched against an OSV feed (the predicate of
	// internal/vulnscan, the scan of the evaluator image).
	Scan Kind = vulnscan.PredicateType
)

// Kinds lists the kinds in the order a verification needs them.
var Kinds = []Kind{Signature, SBOM, Scan}

func (k Kind) short() string {
	switch k {
	case Signature:
		return "signature"
	case SBOM:
		return "SBOM"
	case Scan:
		return "scan"
	}
	return string(k)
}

// Bounds on what is read.
const (
	maxEnvelope = 64 << 20
	maxManifest = 4 << 20
	maxReferrer = 256 // referrers or layers looked at per image
)

// SignaturePredicate is what an image signature states.
type SignaturePredicate struct {
	Reference string    `json:"reference"`
	SignedAt  time.Time `json:"signed_at"`
}

// statement is an in-toto Statement v1 with its predicate kept as bytes.
type statement struct {
	Type          string          `json:"_type"`
	Subject       []subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// ImageDigest checks that s is sha256:<64 lowercase hex> and returns it.
func ImageDigest(s string) (digest.SHA256, error) {
	if !strings.HasPrefix(s, "sha256:") {
		return digest.SHA256{}, fmt.Errorf("image digest %q is not sha256:<hex>", s)
	}
	return digest.Parse(s)
}

// Attest signs a Statement of kind about the image repo@img with signer
// and returns the DSSE envelope. predicate is the kind's predicate as JSON.
func Attest(signer *keys.Signer, kind Kind, repo string, img digest.SHA256, predicate []byte) ([]byte, error) {
	var pred bytes.Buffer
	if err := json.Compact(&pred, predicate); err != nil {
		return nil, fmt.Errorf("the %s predicate is not JSON: %v", kind.short(), err)
	}
	st := statement{Type: StatementType, Subject: []subject{{Name: repo, Digest: map[string]string{"sha256": img.Hex()}}},
		PredicateType: string(kind), Predicate: pred.Bytes()}
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	es, err := dsse.NewEnvelopeSigner(signer)
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(context.Background(), PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("failed to sign the %s: %w", kind.short(), err)
	}
	return json.Marshal(env)
}

// SignaturePayload is the predicate of a signature of reference made at now.
func SignaturePayload(reference string, now time.Time) []byte {
	b, _ := json.Marshal(SignaturePredicate{Reference: reference, SignedAt: now.UTC().Truncate(time.Second)})
	return b
}

// opened is an envelope whose signature a trusted key made, read back.
type opened struct {
	kind      Kind
	key       *trust.Key
	signedAt  time.Time
	predicate json.RawMessage
	envelope  []byte
	where     string
}

var (
	errNotStatement = errors.New("not an in-toto Statement v1 in a DSSE envelope")
	errOtherImage   = errors.New("names another image")
)

// open decodes an envelope, reads the signing time its predicate states
// (the only use of the payload before its signature is checked), verifies
// the signature against tf's keys for images at that time, and checks the
// subject is exactly the image img.
func open(tf *trust.File, b []byte, img digest.SHA256) (*opened, error) {
	var env dsse.Envelope
	if err := strictjson.Decode(b, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotStatement, err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("%w: payload type %q", errNotStatement, env.PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotStatement, err)
	}
	var st statement
	if err := strictjson.Decode(payload, &st); err != nil || st.Type != StatementType {
		return nil, fmt.Errorf("%w (type %q): %v", errNotStatement, st.Type, err)
	}
	o := &opened{kind: Kind(st.PredicateType), predicate: st.Predicate, envelope: b}
	switch o.kind {
	case Signature:
		var p SignaturePredicate
		if err := strictjson.Decode(st.Predicate, &p); err != nil {
			return nil, fmt.Errorf("signature predicate: %v", err)
		}
		o.signedAt = p.SignedAt
	case SBOM:
		var p struct {
			Metadata struct {
				Timestamp time.Time `json:"timestamp"`
			} `json:"metadata"`
		}
		if err := strictjson.DecodeOpen(st.Predicate, &p); err != nil || p.Metadata.Timestamp.IsZero() {
			return nil, fmt.Errorf("the SBOM states no metadata.timestamp (the signing time): %v", err)
		}
		o.signedAt = p.Metadata.Timestamp
	case Scan:
		var p vulnscan.Predicate
		if err := strictjson.Decode(st.Predicate, &p); err != nil {
			return nil, fmt.Errorf("scan predicate: %v", err)
		}
		o.signedAt = p.ScannedAt
	default:
		return nil, fmt.Errorf("predicate type %q is none repro reads", clip(st.PredicateType))
	}
	k, err := tf.Verify(&env, trust.Images, o.signedAt)
	if err != nil {
		return nil, err
	}
	o.key = k
	if len(st.Subject) != 1 || st.Subject[0].Digest["sha256"] != img.Hex() || len(st.Subject[0].Digest) != 1 {
		got := ""
		if len(st.Subject) > 0 {
			got = st.Subject[0].Digest["sha256"]
		}
		return nil, fmt.Errorf("the %s by key %q %w (sha256:%s), not %s", o.kind.short(), k.Name, errOtherImage, clip(got), img)
	}
	return o, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

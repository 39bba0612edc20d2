// Package sigbundle writes and reads a DSSE envelope signed with a
// public key in the Sigstore bundle format v0.3
// (application/vnd.dev.sigstore.bundle.v0.3+json), the form cosign
// verify-blob-attestation --bundle and sigstore-go read:
//
//	{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
//	 "verificationMaterial": {"publicKey": {"hint": "<key id>"}},
//	 "dsseEnvelope": {"payload": "<base64>", "payloadType": "...",
//	                  "signatures": [{"sig": "<base64>"}]}}
//
// The key is named only by the hint (repro's key id, the hex SHA-256 of
// the DER SubjectPublicKeyInfo): the signature's keyid is left empty,
// because Sigstore's DSSE verifier (go-securesystemslib 0.11) skips a
// signature whose keyid differs from its own fingerprint form of the
// key. Such a bundle has no certificate, no transparency log entry and no
// timestamp: it verifies offline, against a public key the verifier
// trusts, and nothing else.
package sigbundle

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reprolab/repro/internal/strictjson"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// MediaType is the bundle format this package writes and reads.
const MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// maxSignatures bounds the signatures of a bundle's envelope (Sigstore
// verifiers accept exactly one).
const maxSignatures = 1

type bundle struct {
	MediaType            string               `json:"mediaType"`
	VerificationMaterial verificationMaterial `json:"verificationMaterial"`
	DSSEEnvelope         *dsse.Envelope       `json:"dsseEnvelope"`
}

type verificationMaterial struct {
	PublicKey *publicKey `json:"publicKey"`
}

type publicKey struct {
	Hint string `json:"hint"`
}

// Wrap returns env (signed once) as a Sigstore bundle naming the key by
// keyID, indented, with a final newline. env is not changed.
func Wrap(env *dsse.Envelope, keyID string) ([]byte, error) {
	if env == nil || len(env.Signatures) != 1 {
		return nil, errors.New("a Sigstore bundle holds an envelope with exactly one signature")
	}
	e := *env
	e.Signatures = []dsse.Signature{{Sig: env.Signatures[0].Sig}}
	b, err := json.MarshalIndent(bundle{MediaType: MediaType, VerificationMaterial: verificationMaterial{PublicKey: &publicKey{Hint: keyID}}, DSSEEnvelope: &e}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Unwrap parses a bundle written by Wrap (or by another tool in the same
// form) and returns its envelope and key hint. A bundle of another media
// type, without a public key hint or an envelope, or with other than one
// signature is an error; checking the signature is the caller's.
func Unwrap(b []byte) (*dsse.Envelope, string, error) {
	var bu bundle
	if err := strictjson.DecodeOpen(b, &bu); err != nil {
		return nil, "", fmt.Errorf("not a Sigstore bundle: %v", err)
	}
	if bu.MediaType != MediaType {
		return nil, "", fmt.Errorf("the Sigstore bundle has media type %q, want %q", bu.MediaType, MediaType)
	}
	if bu.VerificationMaterial.PublicKey == nil {
		return nil, "", errors.New("the Sigstore bundle names no public key (verificationMaterial.publicKey)")
	}
	if bu.DSSEEnvelope == nil {
		return nil, "", errors.New("the Sigstore bundle holds no DSSE envelope")
	}
	if n := len(bu.DSSEEnvelope.Signatures); n == 0 || n > maxSignatures {
		return nil, "", fmt.Errorf("the Sigstore bundle's envelope carries %d signatures, want 1", n)
	}
	return bu.DSSEEnvelope, bu.VerificationMaterial.PublicKey.Hint, nil
}

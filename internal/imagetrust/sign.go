// Package imagetrust decides whether the pinned evaluator image may run:
// it signs the image (an in-toto Statement naming its manifest digest,
// image ID and SBOM digest, in a DSSE envelope signed with an image key),
// and before any sandboxed run verifies the image against the trust file's
// image policy (signature by a key trusted for images, a fresh scan with
// nothing unwaived above a severity, the runtime). It also moves a signed
// image between machines as one bundle (Export, Import).
package imagetrust

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// In-toto names of the image signature.
const (
	PayloadType   = "application/vnd.in-toto+json"
	PredicateType = "https://github.com/reprolab/repro/attestation/evaluator-image/v1"
	// SubjectSBOM names the SBOM in the Statement; the image is named by
	// vulnscan.SubjectManifest and vulnscan.SubjectImageID, as in a scan.
	SubjectSBOM = "evaluator-image/sbom"
)

// maxSignatureBytes bounds a signature file read.
const maxSignatureBytes = 1 << 20

// maxClockSkew is how far in the future a signing or scan time may lie.
const maxClockSkew = 5 * time.Minute

// Predicate is what an image signature states besides its subjects.
type Predicate struct {
	ImageID        string    `json:"image_id"`
	ManifestDigest string    `json:"manifest_digest"`
	SBOMDigest     string    `json:"sbom_digest"`
	Reference      string    `json:"reference,omitempty"`
	LayerDigest    string    `json:"layer_digest,omitempty"`
	SignedAt       time.Time `json:"signed_at"`
}

// SignaturePath is where the image signature of home lives.
func SignaturePath(home string) string { return layout.Home(home).ImageSignature() }

// subjects names the image by manifest digest and image ID, and its SBOM.
func subjects(imageID, manifest, sbom string) ([]*intoto.ResourceDescriptor, error) {
	var out []*intoto.ResourceDescriptor
	for _, s := range [][2]string{{vulnscan.SubjectManifest, manifest}, {vulnscan.SubjectImageID, imageID}, {SubjectSBOM, sbom}} {
		d, err := digest.Parse(s[1])
		if err != nil || !strings.HasPrefix(s[1], "sha256:") {
			return nil, fmt.Errorf("%s digest %q is not sha256:<hex>", s[0], s[1])
		}
		out = append(out, &intoto.ResourceDescriptor{Name: s[0], Digest: map[string]string{"sha256": d.Hex()}})
	}
	return out, nil
}

// Statement returns the in-toto Statement that signs pin's image with the
// SBOM of digest sbom, signed at now, as JSON.
func Statement(pin *sandbox.Pin, sbom string, now time.Time) ([]byte, error) {
	subj, err := subjects(pin.ID, pin.ManifestDigest, sbom)
	if err != nil {
		return nil, err
	}
	pb, err := json.Marshal(Predicate{
		ImageID: pin.ID, ManifestDigest: pin.ManifestDigest, SBOMDigest: sbom,
		Reference: pin.Reference, LayerDigest: pin.LayerDigest, SignedAt: now.UTC().Truncate(time.Second),
	})
	if err != nil {
		return nil, err
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(pb, pred); err != nil {
		return nil, err
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, Subject: subj, PredicateType: PredicateType, Predicate: pred}
	if err := st.Validate(); err != nil {
		return nil, err
	}
	return protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(st)
}

// Signed is a verified image signature.
type Signed struct {
	KeyName   string    `json:"key_name"`
	KeyID     string    `json:"key_id"`
	SignedAt  time.Time `json:"signed_at"`
	Predicate Predicate `json:"-"`
}

// Sign signs the image pinned under home, with the SBOM as pinned and
// checked (sbom is its digest), with the image key s, and stores the
// envelope at SignaturePath. It returns the path and the statement's
// predicate.
func Sign(home string, s *keys.Signer, sbom string, now time.Time) (string, *Predicate, error) {
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		return "", nil, err
	}
	if pin.SBOMDigest != sbom {
		return "", nil, exitcode.Errorf(exitcode.Integrity, "the SBOM digest %s is not the pinned %s: run 'repro image sbom' first", sbom, pin.SBOMDigest)
	}
	if isRunKey(home, s.PublicKey()) {
		return "", nil, exitcode.Errorf(exitcode.Usage, "the key is this REPRO_HOME's run key, which signs run records; sign images with a separate image key (openssl genpkey -algorithm ed25519 -out FILE)")
	}
	payload, err := Statement(pin, sbom, now)
	if err != nil {
		return "", nil, err
	}
	es, err := dsse.NewEnvelopeSigner(s)
	if err != nil {
		return "", nil, err
	}
	env, err := es.SignPayload(context.Background(), PayloadType, payload)
	if err != nil {
		return "", nil, fmt.Errorf("failed to sign the image: %w", err)
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return "", nil, err
	}
	p := SignaturePath(home)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", nil, err
	}
	if err := atomicfile.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return "", nil, err
	}
	pred, _, err := decodeStatement(payload)
	if err != nil {
		return "", nil, err
	}
	return p, pred, nil
}

// isRunKey reports whether pub is home's run key, whose public half is
// stored as PEM SubjectPublicKeyInfo or, in REPRO_HOMEs made before
// internal/keys, as a PEM block of the raw 32 bytes.
func isRunKey(home string, pub ed25519.PublicKey) bool {
	b, err := safefile.ReadFile(runs.LocalPublicKeyPath(home), 16<<10)
	if err != nil {
		return false
	}
	if k, err := keys.ParsePublic(b); err == nil {
		return k.Equal(pub)
	}
	if blk, _ := pem.Decode(b); blk != nil && len(blk.Bytes) == ed25519.PublicKeySize {
		return ed25519.PublicKey(blk.Bytes).Equal(pub)
	}
	return false
}

// decodeStatement reads an image Statement: its type, predicate type and
// predicate, strictly.
func decodeStatement(payload []byte) (*Predicate, []*intoto.ResourceDescriptor, error) {
	var st intoto.Statement
	if err := (protojson.UnmarshalOptions{}).Unmarshal(payload, &st); err != nil {
		return nil, nil, fmt.Errorf("not an in-toto Statement: %v", err)
	}
	if err := st.Validate(); err != nil {
		return nil, nil, fmt.Errorf("not a valid in-toto Statement: %v", err)
	}
	if st.GetType() != intoto.StatementTypeUri || st.GetPredicateType() != PredicateType {
		return nil, nil, fmt.Errorf("statement type %q with predicate type %q, want %q with %q", st.GetType(), st.GetPredicateType(), intoto.StatementTypeUri, PredicateType)
	}
	pb, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, nil, err
	}
	var p Predicate
	if err := strictjson.Decode(pb, &p); err != nil {
		return nil, nil, fmt.Errorf("image predicate: %v", err)
	}
	return &p, st.GetSubject(), nil
}

// ErrNoSignature: the image carries no signature file.
var ErrNoSignature = errors.New("the evaluator image is not signed")

// VerifySignature checks the signature stored at sigPath against tf: a
// DSSE envelope over an image Statement, signed by a key trusted for
// images valid at the stated signing time, whose subjects are exactly
// imageID, manifest and sbom. Every failure is an exitcode.Integrity
// error whose message says how to fix it (a missing file wraps
// ErrNoSignature).
func VerifySignature(tf *trust.File, sigPath, imageID, manifest, sbom string, now time.Time) (*Signed, error) {
	fix := "sign it with 'repro image sign --key FILE' (a key the trust file lists for \"images\") or import a signed image with 'repro image import'"
	b, err := safefile.ReadFile(sigPath, maxSignatureBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.New(exitcode.Integrity, fmt.Errorf("%w (no %q) and the trust file requires a signature: %s", ErrNoSignature, sigPath, fix))
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q cannot be read: %v", sigPath, err)
	}
	var env dsse.Envelope
	if err := strictjson.Decode(b, &env); err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q is not a DSSE envelope: %v; %s", sigPath, err, fix)
	}
	if env.PayloadType != PayloadType {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q has payload type %q, want %q", sigPath, env.PayloadType, PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q: payload: %v", sigPath, err)
	}
	// The payload is read before its signature is checked only to learn
	// the signing time; nothing in it is used unless the signature holds.
	pred, subj, err := decodeStatement(payload)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q: %v", sigPath, err)
	}
	k, err := tf.Verify(&env, trust.Images, pred.SignedAt)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q: %v; %s", sigPath, err, fix)
	}
	if pred.SignedAt.After(now.Add(maxClockSkew)) {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q states a signing time %s in the future", sigPath, pred.SignedAt.Format(time.RFC3339))
	}
	want, err := subjects(imageID, manifest, sbom)
	if err != nil {
		return nil, exitcode.New(exitcode.Integrity, err)
	}
	if !sameSubjects(subj, want) || pred.ImageID != imageID || pred.ManifestDigest != manifest || pred.SBOMDigest != sbom {
		return nil, exitcode.Errorf(exitcode.Integrity, "the image signature %q (key %q) is for image %s with SBOM %s, not the pinned image %s with SBOM %s: %s",
			sigPath, k.Name, pred.ImageID, pred.SBOMDigest, imageID, sbom, fix)
	}
	return &Signed{KeyName: k.Name, KeyID: k.ID, SignedAt: pred.SignedAt, Predicate: *pred}, nil
}

func sameSubjects(a, b []*intoto.ResourceDescriptor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetName() != b[i].GetName() || len(a[i].GetDigest()) != len(b[i].GetDigest()) || a[i].GetUri() != "" || len(a[i].GetContent()) != 0 {
			return false
		}
		for k, v := range b[i].GetDigest() {
			if a[i].GetDigest()[k] != v {
				return false
			}
		}
	}
	return true
}

// Package trust reads a trust file: the public keys a user accepts, each
// with a name, the purposes it may sign for and a validity window, what
// an evaluator image must show before it runs, and what a leaderboard
// requires before it ranks a submitted run. It verifies DSSE envelopes
// against those keys.
//
// A trust file is JSON (unknown fields are errors):
//
//	{
//	  "version": 1,
//	  "keys": [
//	    {"name": "lab-ci", "key_id": "<hex SHA-256 of the DER SubjectPublicKeyInfo>",
//	     "public_key": "-----BEGIN PUBLIC KEY-----\n...",
//	     "purposes": ["run-records", "images"],
//	     "not_before": "2026-01-01T00:00:00Z", "not_after": "2027-01-01T00:00:00Z"}
//	  ],
//	  "image": {"require_signature": true, "scan": {"max_age_days": 7, "max_severity": "high"}},
//	  "leaderboard": {"require_reexecution": true}
//	}
//
// "image": {"profile": "production"} is the production profile in one
// setting: gVisor's runsc runtime, a signed image, a scan no older than
// DefaultScanPolicy's age with nothing unwaived above its severity (a scan
// policy stated beside it takes the default's place; see Effective), and a
// runtime with no open known escape unless "runtime_waivers" waives it:
//
//	"image": {"profile": "production", "runtime_waivers": [
//	  {"id": "CVE-2025-31133", "package": "runc", "reason": "...", "expires": "2027-01-31"}]}
//
// A signature counts only when its key is listed for the purpose at hand and
// the signing time the signed payload states lies inside the key's window;
// a rotated key thus still verifies what it signed while it was valid.
package trust

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Version is the trust file format version this package reads.
const Version = 1

// MaxFileSize bounds a trust file read.
const MaxFileSize = 1 << 20

// maxKeys and maxSignatures bound the work one file or envelope can cause.
const (
	maxKeys       = 1024
	maxSignatures = 16
)

// Purpose is what a key may sign.
type Purpose string

const (
	// RunRecords: run records, shard records, scan and other attestations
	// about runs.
	RunRecords Purpose = "run-records"
	// Images: evaluator image signatures.
	Images Purpose = "images"
)

func (p Purpose) valid() bool { return p == RunRecords || p == Images }

// File is a parsed, checked trust file.
type File struct {
	Version int         `json:"version"`
	Keys    []Key       `json:"keys"`
	Image   ImagePolicy `json:"image,omitzero"`
	// Leaderboard is the ranking policy of the boards made from the
	// REPRO_HOME whose trust file this is.
	Leaderboard LeaderboardPolicy `json:"leaderboard,omitzero"`
}

// LeaderboardPolicy is what a submitted run (one not signed with the
// REPRO_HOME's own run key) must show, beyond verifying, before a
// leaderboard ranks it. The zero value requires nothing more.
type LeaderboardPolicy struct {
	// RequireReexecution: a submitted run ranks only when its newest
	// re-execution on this machine (repro runs reproduce, signed with the
	// local run key) agrees with it verdict by verdict.
	RequireReexecution bool `json:"require_reexecution,omitempty"`
}

// Key is one trusted public key. ID must equal keys.ID of PublicKey.
type Key struct {
	Name      string     `json:"name"`
	ID        string     `json:"key_id"`
	PublicKey string     `json:"public_key"`
	Purposes  []Purpose  `json:"purposes"`
	NotBefore *time.Time `json:"not_before,omitempty"`
	NotAfter  *time.Time `json:"not_after,omitempty"`

	pub ed25519.PublicKey
}

// Public returns the parsed public key (set by Parse and NewKey).
func (k *Key) Public() ed25519.PublicKey { return k.pub }

// ValidAt reports whether t lies inside the key's window.
func (k *Key) ValidAt(t time.Time) bool {
	if k.NotBefore != nil && t.Before(*k.NotBefore) {
		return false
	}
	if k.NotAfter != nil && !t.Before(*k.NotAfter) {
		return false
	}
	return true
}

// ImagePolicy is what an evaluator image must show before a sandboxed run
// uses it. The zero value requires nothing beyond the local image pin.
type ImagePolicy struct {
	// RequireSignature: the image must carry a signature by a key trusted
	// for Images.
	RequireSignature bool `json:"require_signature,omitempty"`
	// Scan, when set, requires a signed vulnerability scan of the image.
	Scan *ScanPolicy `json:"scan,omitempty"`
	// Runtime, when set, is the container runtime every sandboxed run
	// must use ("runc" or "runsc").
	Runtime string `json:"runtime,omitempty"`
	// Profile names a set of requirements; ProfileProduction is the only
	// one. Effective applies it.
	Profile string `json:"profile,omitempty"`
	// RefuseRuntimeEscapes refuses a sandboxed run whose container
	// runtime has a known escape that is open (affected, or not known to
	// be fixed) and not waived in RuntimeWaivers.
	RefuseRuntimeEscapes bool `json:"refuse_runtime_escapes,omitempty"`
	// RuntimeWaivers accept open runtime escapes: a JSON array of waivers
	// in the form of 'repro image scan --waivers' (id, package = the
	// runtime, reason, expires), checked by internal/vulnscan when a run
	// applies the policy.
	RuntimeWaivers json.RawMessage `json:"runtime_waivers,omitempty"`
}

// ProfileProduction requires RuntimeGVisor, a signature, a scan, and a
// runtime without an open known escape.
const ProfileProduction = "production"

// Runtimes a policy can require.
const (
	RuntimeRunc   = "runc"
	RuntimeGVisor = "runsc"
)

// DefaultScanPolicy is the scan the production profile requires when the
// trust file states none.
var DefaultScanPolicy = ScanPolicy{MaxAgeDays: 7, MaxSeverity: "high"}

// Effective returns the policy with its profile applied: for
// ProfileProduction, RequireSignature, Runtime runsc, and the stated scan
// policy or DefaultScanPolicy. Parse has refused a production profile
// that states a weaker runtime.
func (p ImagePolicy) Effective() ImagePolicy {
	if p.Profile != ProfileProduction {
		return p
	}
	p.RequireSignature = true
	p.Runtime = RuntimeGVisor
	p.RefuseRuntimeEscapes = true
	if p.Scan == nil {
		s := DefaultScanPolicy
		p.Scan = &s
	}
	return p
}

// RequiresNothing reports whether the policy asks for nothing beyond the
// local image pin (the behaviour without a trust file).
func (p ImagePolicy) RequiresNothing() bool {
	e := p.Effective()
	return !e.RequireSignature && e.Scan == nil && e.Runtime == "" && !e.RefuseRuntimeEscapes
}

// ScanPolicy requires a scan no older than MaxAgeDays with no unwaived
// finding above MaxSeverity (a level name of internal/vulnscan; the
// consumer checks the name, since levels are the scanner's vocabulary).
type ScanPolicy struct {
	MaxAgeDays  int    `json:"max_age_days"`
	MaxSeverity string `json:"max_severity"`
}

// NewKey makes a trust entry for pub.
func NewKey(name string, pub ed25519.PublicKey, purposes []Purpose, notBefore, notAfter *time.Time) Key {
	return Key{Name: name, ID: keys.ID(pub), PublicKey: string(keys.MarshalPublic(pub)), Purposes: purposes, NotBefore: notBefore, NotAfter: notAfter, pub: pub}
}

// Load reads and checks the trust file at path (a path the user named:
// a link is followed, the target must be a regular file).
func Load(path string) (*File, error) {
	t, _, err := LoadBytes(path)
	return t, err
}

// LoadBytes is Load that also returns the bytes it checked.
func LoadBytes(path string) (*File, []byte, error) {
	f, err := safefile.OpenNamed(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read trust file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read trust file: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, nil, fmt.Errorf("trust file %q is larger than %d bytes", path, MaxFileSize)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("trust file %q: %v", path, err)
	}
	return t, b, nil
}

// Parse decodes and checks a trust file: version, unique names and ids,
// each id matching its key, known purposes, windows that are not empty,
// and a scan policy with a positive age.
func Parse(b []byte) (*File, error) {
	var t File
	if err := strictjson.Decode(b, &t); err != nil {
		return nil, err
	}
	if t.Version != Version {
		return nil, fmt.Errorf("version %d, this repro reads version %d", t.Version, Version)
	}
	if len(t.Keys) > maxKeys {
		return nil, fmt.Errorf("%d keys, at most %d", len(t.Keys), maxKeys)
	}
	names := map[string]bool{}
	ids := map[string]bool{}
	for i := range t.Keys {
		k := &t.Keys[i]
		if k.Name == "" {
			return nil, fmt.Errorf("key %d has no name", i+1)
		}
		if names[k.Name] {
			return nil, fmt.Errorf("key name %q appears twice", k.Name)
		}
		names[k.Name] = true
		pub, err := keys.ParsePublic([]byte(k.PublicKey))
		if err != nil {
			return nil, fmt.Errorf("key %q: %v", k.Name, err)
		}
		if id := keys.ID(pub); id != k.ID {
			return nil, fmt.Errorf("key %q: key_id %q does not match its public key (%s)", k.Name, k.ID, id)
		}
		if ids[k.ID] {
			return nil, fmt.Errorf("key %q: key_id %s appears twice", k.Name, k.ID)
		}
		ids[k.ID] = true
		if len(k.Purposes) == 0 {
			return nil, fmt.Errorf("key %q lists no purposes (want %q and/or %q)", k.Name, RunRecords, Images)
		}
		for _, p := range k.Purposes {
			if !p.valid() {
				return nil, fmt.Errorf("key %q: unknown purpose %q (want %q or %q)", k.Name, p, RunRecords, Images)
			}
		}
		if k.NotBefore != nil && k.NotAfter != nil && !k.NotBefore.Before(*k.NotAfter) {
			return nil, fmt.Errorf("key %q: not_before %s is not before not_after %s", k.Name, k.NotBefore.Format(time.RFC3339), k.NotAfter.Format(time.RFC3339))
		}
		k.pub = pub
	}
	if s := t.Image.Scan; s != nil {
		if s.MaxAgeDays <= 0 {
			return nil, errors.New("image.scan.max_age_days must be at least 1")
		}
		if s.MaxSeverity == "" {
			return nil, errors.New("image.scan.max_severity is empty")
		}
	}
	if w := t.Image.RuntimeWaivers; len(w) > 0 {
		var list []json.RawMessage
		if err := strictjson.Decode(w, &list); err != nil {
			return nil, fmt.Errorf("image.runtime_waivers is not a JSON array of waivers: %v", err)
		}
	}
	switch t.Image.Profile {
	case "", ProfileProduction:
	default:
		return nil, fmt.Errorf("image.profile %q is unknown (want %q)", t.Image.Profile, ProfileProduction)
	}
	switch t.Image.Runtime {
	case "", RuntimeRunc, RuntimeGVisor:
	default:
		return nil, fmt.Errorf("image.runtime %q is unknown (want %q or %q)", t.Image.Runtime, RuntimeRunc, RuntimeGVisor)
	}
	if t.Image.Profile == ProfileProduction && t.Image.Runtime == RuntimeRunc {
		return nil, fmt.Errorf("image.profile %q requires runtime %q; remove image.runtime %q", ProfileProduction, RuntimeGVisor, RuntimeRunc)
	}
	if t.Image.Effective().RequireSignature && len(t.For(Images)) == 0 {
		return nil, fmt.Errorf("the image policy requires a signature but no key is trusted for %q", Images)
	}
	return &t, nil
}

// For returns the keys trusted for purpose.
func (t *File) For(purpose Purpose) []*Key {
	var out []*Key
	for i := range t.Keys {
		if slices.Contains(t.Keys[i].Purposes, purpose) {
			out = append(out, &t.Keys[i])
		}
	}
	return out
}

// Errors of Verify, wrapped with details; tell them apart with errors.Is.
var (
	// ErrUnsigned: the envelope carries no signature.
	ErrUnsigned = errors.New("envelope carries no signature")
	// ErrUntrustedKey: no signature is by a key trusted for the purpose.
	ErrUntrustedKey = errors.New("not signed by a trusted key")
	// ErrOutsideWindow: a trusted key signed, but the signing time lies
	// outside its validity window (expired or not yet valid).
	ErrOutsideWindow = errors.New("signing key was not valid at the signing time")
	// ErrBadSignature: a signature names a trusted key but does not verify.
	ErrBadSignature = errors.New("signature does not verify")
)

// Verify checks that env carries a valid signature, over its payload type
// and payload, by a key trusted for purpose whose window holds signedAt
// (the time the payload states it was signed; callers read it from the
// payload, which this signature then authenticates). It returns the key.
// When several signatures are present one good one suffices; the error
// for none names the most telling failure.
func (t *File) Verify(env *dsse.Envelope, purpose Purpose, signedAt time.Time) (*Key, error) {
	if env == nil || len(env.Signatures) == 0 {
		return nil, ErrUnsigned
	}
	if len(env.Signatures) > maxSignatures {
		return nil, fmt.Errorf("envelope carries %d signatures, at most %d", len(env.Signatures), maxSignatures)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("envelope payload: %v", err)
	}
	pae := dsse.PAE(env.PayloadType, payload)
	trusted := t.For(purpose)
	var bad, outside *Key
	var seen []string
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			sig, err = base64.URLEncoding.DecodeString(s.Sig)
		}
		if err != nil {
			continue
		}
		for _, k := range trusted {
			if s.KeyID != "" && s.KeyID != k.ID {
				continue
			}
			if !ed25519.Verify(k.pub, pae, sig) {
				if s.KeyID == k.ID {
					bad = k
				}
				continue
			}
			if !k.ValidAt(signedAt) {
				outside = k
				continue
			}
			return k, nil
		}
		seen = append(seen, s.KeyID)
	}
	switch {
	case outside != nil:
		return nil, fmt.Errorf("%w: key %q (%s) is valid %s, signed at %s", ErrOutsideWindow, outside.Name, outside.ID, outside.window(), signedAt.UTC().Format(time.RFC3339Nano))
	case bad != nil:
		return nil, fmt.Errorf("%w with key %q (%s)", ErrBadSignature, bad.Name, bad.ID)
	default:
		return nil, fmt.Errorf("%w for %s: signatures name key ids %q; add the signer's public key to the trust file (repro keys export prints it)", ErrUntrustedKey, purpose, seen)
	}
}

func (k *Key) window() string {
	from, to := "always", "no end"
	if k.NotBefore != nil {
		from = k.NotBefore.UTC().Format(time.RFC3339Nano)
	}
	if k.NotAfter != nil {
		to = k.NotAfter.UTC().Format(time.RFC3339Nano)
	}
	return "from " + from + " until " + to
}

package runs

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sigbundle"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// LegacyPayloadType is the DSSE payload type of run records signed before
// records became in-toto statements: the payload is record.json itself.
// Such records still verify, reported as legacy.
const LegacyPayloadType = "application/vnd.reprolab.repro.run+json"

const (
	privFile = "run-signing.key"
	pubFile  = "run-signing.pub"
	// legacyKeyType is the PEM type of the seed-only key file that
	// preceded PKCS #8; LocalKey migrates it once.
	legacyKeyType = "REPRO RUN KEY"
	// LocalKeyName is the trust-file name of the key a REPRO_HOME makes
	// for itself.
	LocalKeyName = "local"
)

// LocalKeyPath is the private run key of home.
func LocalKeyPath(home string) string { return filepath.Join(layout.Home(home).Keys(), privFile) }

// LocalPublicKeyPath is the public run key of home (PEM SubjectPublicKeyInfo).
func LocalPublicKeyPath(home string) string {
	return filepath.Join(layout.Home(home).Keys(), pubFile)
}

// LocalKey loads home's run key (REPRO_HOME/keys/run-signing.key, PKCS #8,
// mode 0600), making it on first use. A key file of the earlier seed-only
// format is rewritten once, atomically, as PKCS #8 with the same key, so
// what it signed keeps verifying. When home has no trust file yet, one is
// made that trusts this key for run records with an open window.
func LocalKey(home string) (*keys.Signer, error) {
	dir := layout.Home(home).Keys()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := LocalKeyPath(home)
	s, err := keys.LoadPrivate(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if s, err = keys.Generate(); err != nil {
			return nil, err
		}
		der, err := s.MarshalPrivate()
		if err != nil {
			return nil, err
		}
		created, err := createExclusive(p, der, 0o600)
		if err != nil {
			return nil, err
		}
		if !created {
			// Another repro process made the key first: use that one.
			if s, err = keys.LoadPrivate(p); err != nil {
				return nil, err
			}
		}
	case err != nil:
		var perm *keys.PermissionError
		if errors.As(err, &perm) {
			return nil, err
		}
		if s, err = migrateLegacyKey(p, err); err != nil {
			return nil, err
		}
	}
	if err := writePublic(home, s); err != nil {
		return nil, err
	}
	if err := ensureTrust(home, s); err != nil {
		return nil, err
	}
	return s, nil
}

// migrateLegacyKey rewrites a seed-only key file at p as PKCS #8; loadErr
// is why keys.LoadPrivate refused it, returned when p is not a legacy key.
func migrateLegacyKey(p string, loadErr error) (*keys.Signer, error) {
	b, err := safefile.ReadFile(p, 4096)
	if err != nil {
		return nil, loadErr
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != legacyKeyType {
		return nil, loadErr
	}
	s, err := keys.FromSeed(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%q is not a repro run key: %v", p, err)
	}
	der, err := s.MarshalPrivate()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(p, der, 0o600); err != nil {
		return nil, fmt.Errorf("cannot migrate the run key %q to PKCS #8: %v", p, err)
	}
	return s, nil
}

// writePublic keeps keys/run-signing.pub equal to s's public key.
func writePublic(home string, s *keys.Signer) error {
	want := keys.MarshalPublic(s.PublicKey())
	p := LocalPublicKeyPath(home)
	if b, err := safefile.ReadFile(p, 16<<10); err == nil && string(b) == string(want) {
		return nil
	}
	return atomicfile.WriteFile(p, want, 0o644)
}

// ensureTrust makes home's trust file, trusting s for run records, if
// there is none.
func ensureTrust(home string, s *keys.Signer) error {
	p := layout.Home(home).Trust()
	if _, err := os.Lstat(p); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	t := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey(LocalKeyName, s.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	_, err = createExclusive(p, append(b, '\n'), 0o644)
	return err
}

// createExclusive writes data to path, complete and synced, unless path
// exists: it reports whether it created the file. Two processes racing to
// make the same file thus agree on one content.
func createExclusive(path string, data []byte, perm os.FileMode) (bool, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return false, err
	}
	tmp := fmt.Sprintf("%s.new-%x", path, rnd)
	if err := atomicfile.WriteFile(tmp, data, perm); err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); errors.Is(err, os.ErrExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, atomicfile.SyncDir(filepath.Dir(path))
}

// WriteTrust writes t to path atomically (mode 0644) after checking that
// it parses back.
func WriteTrust(path string, t *trust.File) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := trust.Parse(b); err != nil {
		return fmt.Errorf("refusing to write an invalid trust file %q: %v", path, err)
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// LoadTrust reads the trust file at path; "" means home's default
// (REPRO_HOME/trust.json). A missing file is an exitcode.Precondition
// error that says how to get one.
func LoadTrust(home, path string) (*trust.File, error) {
	t, _, err := LoadTrustBytes(home, path)
	return t, err
}

// LoadTrustBytes is LoadTrust that also returns the trust file's bytes.
func LoadTrustBytes(home, path string) (*trust.File, []byte, error) {
	if path == "" {
		path = layout.Home(home).Trust()
	}
	t, b, err := trust.LoadBytes(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, exitcode.Errorf(exitcode.Precondition, "no trust file %q: it is made when this REPRO_HOME first signs a run; to check runs signed elsewhere, pass --trust FILE with the signer's public key (see docs/provenance.md)", path)
	}
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Precondition, err)
	}
	return t, b, nil
}

// RotateKey replaces home's run key with a new one. In home's trust file
// the old key's window closes now and the new key is trusted from now,
// so records the old key signed keep verifying. The old private key is
// gone afterwards. It returns the old and new key ids.
func RotateKey(home string, now time.Time) (oldID, newID string, err error) {
	old, err := LocalKey(home)
	if err != nil {
		return "", "", err
	}
	t, err := LoadTrust(home, "")
	if err != nil {
		return "", "", err
	}
	next, err := keys.Generate()
	if err != nil {
		return "", "", err
	}
	now = now.UTC()
	oldID, newID = keys.ID(old.PublicKey()), keys.ID(next.PublicKey())
	found := false
	for i := range t.Keys {
		k := &t.Keys[i]
		if k.ID != oldID {
			continue
		}
		found = true
		if k.NotAfter == nil || k.NotAfter.After(now) {
			end := now
			k.NotAfter = &end
		}
		if k.NotBefore != nil && !k.NotBefore.Before(*k.NotAfter) {
			return "", "", fmt.Errorf("the run key %s became valid at %s, not before now; rotate again", oldID, k.NotBefore.Format(time.RFC3339Nano))
		}
	}
	if !found {
		return "", "", exitcode.Errorf(exitcode.Precondition, "the trust file %q does not list the run key %s; add it (repro keys export) before rotating", layout.Home(home).Trust(), oldID)
	}
	name := LocalKeyName + "-" + now.Format("20060102T150405.000000000Z")
	start := now
	t.Keys = append(t.Keys, trust.NewKey(name, next.PublicKey(), []trust.Purpose{trust.RunRecords}, &start, nil))
	if err := WriteTrust(layout.Home(home).Trust(), t); err != nil {
		return "", "", err
	}
	priv, err := next.MarshalPrivate()
	if err != nil {
		return "", "", err
	}
	if err := atomicfile.WriteFile(LocalKeyPath(home), priv, 0o600); err != nil {
		return "", "", err
	}
	return oldID, newID, writePublic(home, next)
}

// SignEnvelope signs payload of type payloadType with home's run key
// (made on first use) and returns the DSSE envelope as indented JSON. It
// lets other records of REPRO_HOME (the image's scan attestation) be
// signed by the key that signs run records.
func SignEnvelope(home, payloadType string, payload []byte) ([]byte, error) {
	k, err := LocalKey(home)
	if err != nil {
		return nil, fmt.Errorf("cannot load the run key: %w", err)
	}
	return signEnvelope(k, payloadType, payload)
}

func signEnvelope(k *keys.Signer, payloadType string, payload []byte) ([]byte, error) {
	env, err := sign(k, payloadType, payload)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// sign returns the DSSE envelope of payload signed with k.
func sign(k *keys.Signer, payloadType string, payload []byte) (*dsse.Envelope, error) {
	signer, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		return nil, err
	}
	env, err := signer.SignPayload(context.Background(), payloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("failed to sign: %w", err)
	}
	return env, nil
}

// signBundle returns payload, an in-toto statement, signed with k as a
// Sigstore bundle (see internal/sigbundle).
func signBundle(k *keys.Signer, payload []byte) ([]byte, error) {
	env, err := sign(k, PayloadType, payload)
	if err != nil {
		return nil, err
	}
	return sigbundle.Wrap(env, keys.ID(k.PublicKey()))
}

// OpenEnvelope verifies a DSSE envelope made by SignEnvelope against the
// keys home's trust file trusts for run records now, and returns its
// payload; an envelope of another payload type, or one no such key
// signed, is an error.
func OpenEnvelope(home, payloadType string, envBytes []byte) ([]byte, error) {
	env, payload, err := decodeEnvelope(envBytes, payloadType)
	if err != nil {
		return nil, err
	}
	t, err := LoadTrust(home, "")
	if err != nil {
		return nil, err
	}
	if _, err := verifyTrusted(t, env, trust.RunRecords, time.Now()); err != nil {
		return nil, err
	}
	return payload, nil
}

// verifyTrusted is t.Verify, which also accepts envelopes whose
// signatures name keys by the id repro used before standard key ids (the
// SHA-256 of the raw public key): when no signature names a trusted key,
// it tries again with the key ids left out, so each trusted key is tried.
func verifyTrusted(t *trust.File, env *dsse.Envelope, purpose trust.Purpose, at time.Time) (*trust.Key, error) {
	k, err := t.Verify(env, purpose, at)
	if err == nil || !errors.Is(err, trust.ErrUntrustedKey) {
		return k, err
	}
	anon := *env
	anon.Signatures = make([]dsse.Signature, len(env.Signatures))
	for i, s := range env.Signatures {
		anon.Signatures[i] = dsse.Signature{Sig: s.Sig}
	}
	if k, err2 := t.Verify(&anon, purpose, at); err2 == nil || !errors.Is(err2, trust.ErrUntrustedKey) {
		return k, err2
	}
	return nil, err
}

// decodeEnvelope parses a DSSE envelope of payload type want ("" for
// any) and decodes its payload.
func decodeEnvelope(b []byte, want string) (*dsse.Envelope, []byte, error) {
	var env dsse.Envelope
	if err := strictjson.DecodeOpen(b, &env); err != nil {
		return nil, nil, fmt.Errorf("signature envelope is not valid JSON: %v", err)
	}
	if want != "" && env.PayloadType != want {
		return nil, nil, fmt.Errorf("signature envelope has payload type %q, want %q", env.PayloadType, want)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, nil, fmt.Errorf("signature envelope payload: %v", err)
	}
	return &env, payload, nil
}

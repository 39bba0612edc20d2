package runs

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// PayloadType is the DSSE payload type of a run record.
const PayloadType = "application/vnd.reprolab.repro.run+json"

// key is the local ed25519 run key; it implements dsse.SignerVerifier.
type key struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func (k *key) Sign(_ context.Context, data []byte) ([]byte, error) {
	if k.priv == nil {
		return nil, errors.New("no private run key")
	}
	return ed25519.Sign(k.priv, data), nil
}

func (k *key) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(k.pub, data, sig) {
		return errors.New("signature does not verify")
	}
	return nil
}

// KeyID is the hex SHA-256 of the raw public key.
func (k *key) KeyID() (string, error) {
	return digest.Of(k.pub).Hex(), nil
}

func (k *key) Public() crypto.PublicKey { return k.pub }

var _ dsse.SignerVerifier = (*key)(nil)

const (
	privFile = "run-signing.key"
	pubFile  = "run-signing.pub"
)

// signingKey loads REPRO_HOME/keys/run-signing.key, creating the key pair on
// first use (private key mode 0600).
func signingKey(home string) (*key, error) {
	dir := layout.Home(home).Keys()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(filepath.Join(dir, privFile), 4096)
	if errors.Is(err, os.ErrNotExist) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, privFile), pem.EncodeToMemory(&pem.Block{Type: "REPRO RUN KEY", Bytes: priv.Seed()}), 0o600); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, pubFile), pem.EncodeToMemory(&pem.Block{Type: "REPRO RUN PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
			return nil, err
		}
		return &key{priv: priv, pub: pub}, nil
	}
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "REPRO RUN KEY" || len(blk.Bytes) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s is not a repro run key", filepath.Join(dir, privFile))
	}
	priv := ed25519.NewKeyFromSeed(blk.Bytes)
	return &key{priv: priv, pub: priv.Public().(ed25519.PublicKey)}, nil
}

// verifyingKey loads the public run key.
func verifyingKey(home string) (*key, error) {
	p := filepath.Join(layout.Home(home).Keys(), pubFile)
	b, err := safefile.ReadFile(p, 4096)
	if err != nil {
		return nil, fmt.Errorf("cannot read the public run key %s: %w", p, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "REPRO RUN PUBLIC KEY" || len(blk.Bytes) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%s is not a repro public run key", p)
	}
	return &key{pub: ed25519.PublicKey(blk.Bytes)}, nil
}

// SignEnvelope signs payload of type payloadType with home's run key
// (made on first use) and returns the DSSE envelope as indented JSON. It
// lets other records of REPRO_HOME (the image's scan attestation) be
// signed by the key that signs run records.
func SignEnvelope(home, payloadType string, payload []byte) ([]byte, error) {
	k, err := signingKey(home)
	if err != nil {
		return nil, fmt.Errorf("cannot load the run key: %w", err)
	}
	signer, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		return nil, err
	}
	env, err := signer.SignPayload(context.Background(), payloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("failed to sign: %w", err)
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// OpenEnvelope verifies a DSSE envelope made by SignEnvelope against home's
// public run key and returns its payload; an envelope of another payload
// type, or one the key did not sign, is an error.
func OpenEnvelope(home, payloadType string, envBytes []byte) ([]byte, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envBytes, &env); err != nil {
		return nil, fmt.Errorf("signature envelope is not valid JSON: %v", err)
	}
	if env.PayloadType != payloadType {
		return nil, fmt.Errorf("signature envelope has payload type %q, want %q", env.PayloadType, payloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("signature envelope payload: %v", err)
	}
	k, err := verifyingKey(home)
	if err != nil {
		return nil, err
	}
	v, err := dsse.NewEnvelopeVerifier(k)
	if err != nil {
		return nil, err
	}
	if _, err := v.Verify(context.Background(), &env); err != nil {
		return nil, fmt.Errorf("signature does not verify with the run key: %v", err)
	}
	return payload, nil
}

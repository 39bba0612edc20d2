// Package keys owns ed25519 signing keys on disk and their standard
// encodings: private keys as PKCS #8 PEM ("PRIVATE KEY") in files of mode
// 0600 or narrower, public keys as PEM SubjectPublicKeyInfo ("PUBLIC
// KEY"), and key ids as the hex SHA-256 of the DER SubjectPublicKeyInfo.
// A Signer implements dsse.SignerVerifier, so any DSSE envelope repro
// writes is signed through this package.
package keys

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// maxKeyFile bounds a key file read; a PEM ed25519 key is under 200 bytes.
const maxKeyFile = 16 << 10

// PEM block types.
const (
	privateType = "PRIVATE KEY"
	publicType  = "PUBLIC KEY"
)

// ID is the key id of pub: the hex SHA-256 of its DER SubjectPublicKeyInfo.
func ID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		// MarshalPKIXPublicKey fails only for key types it does not know.
		panic(err)
	}
	return digest.Of(der).Hex()
}

// MarshalPublic returns pub as PEM SubjectPublicKeyInfo.
func MarshalPublic(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: publicType, Bytes: der})
}

// ParsePublic reads one PEM SubjectPublicKeyInfo holding an ed25519 key;
// trailing data, other block types and other key types are errors.
func ParsePublic(b []byte) (ed25519.PublicKey, error) {
	blk, rest := pem.Decode(b)
	if blk == nil || blk.Type != publicType {
		return nil, errors.New("not a PEM public key (want a \"PUBLIC KEY\" block)")
	}
	if len(pemTrim(rest)) != 0 {
		return nil, errors.New("data after the PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %v", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key is %T, want ed25519", k)
	}
	return pub, nil
}

func pemTrim(b []byte) []byte {
	for len(b) > 0 && (b[0] == '\n' || b[0] == '\r' || b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// Signer is an ed25519 key pair (or, for verifying only, a public key).
// It implements dsse.SignerVerifier with the standard key id.
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

var _ dsse.SignerVerifier = (*Signer)(nil)

// Generate makes a new key pair.
func Generate() (*Signer, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Signer{priv: priv, pub: pub}, nil
}

// FromSeed makes the key pair of an ed25519 seed (RFC 8032 private key).
func FromSeed(seed []byte) (*Signer, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("ed25519 seed is %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return &Signer{priv: priv, pub: priv.Public().(ed25519.PublicKey)}, nil
}

// Verifier wraps a public key; Sign fails on it.
func Verifier(pub ed25519.PublicKey) *Signer { return &Signer{pub: pub} }

// PublicKey returns the public half.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// Sign signs data (the DSSE pre-authentication encoding).
func (s *Signer) Sign(_ context.Context, data []byte) ([]byte, error) {
	if s.priv == nil {
		return nil, errors.New("no private key to sign with")
	}
	return ed25519.Sign(s.priv, data), nil
}

// Verify checks sig over data.
func (s *Signer) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(s.pub, data, sig) {
		return errors.New("signature does not verify")
	}
	return nil
}

// KeyID returns ID of the public key.
func (s *Signer) KeyID() (string, error) { return ID(s.pub), nil }

// Public returns the public key.
func (s *Signer) Public() crypto.PublicKey { return s.pub }

// MarshalPrivate returns the private key as PKCS #8 PEM.
func (s *Signer) MarshalPrivate() ([]byte, error) {
	if s.priv == nil {
		return nil, errors.New("no private key")
	}
	der, err := x509.MarshalPKCS8PrivateKey(s.priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: privateType, Bytes: der}), nil
}

// PermissionError says a private key file is readable or writable by
// others than its owner.
type PermissionError struct {
	Path string
	Mode os.FileMode
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("private key %q has mode %04o; it must be 0600 or narrower (chmod 600 %q)", e.Path, e.Mode.Perm(), e.Path)
}

// LoadPrivate reads a PKCS #8 PEM ed25519 private key from path, which must
// be a regular file of mode 0600 or narrower (a *PermissionError otherwise).
func LoadPrivate(path string) (*Signer, error) {
	f, err := safefile.OpenNamed(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, &PermissionError{Path: path, Mode: fi.Mode()}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("private key %q is larger than %d bytes", path, maxKeyFile)
	}
	s, err := ParsePrivate(b)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", path, err)
	}
	return s, nil
}

// ParsePrivate reads one PKCS #8 PEM ed25519 private key.
func ParsePrivate(b []byte) (*Signer, error) {
	blk, rest := pem.Decode(b)
	if blk == nil || blk.Type != privateType {
		return nil, errors.New("not a PEM private key (want a PKCS #8 \"PRIVATE KEY\" block)")
	}
	if len(pemTrim(rest)) != 0 {
		return nil, errors.New("data after the PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key: %v", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key is %T, want ed25519", k)
	}
	return &Signer{priv: priv, pub: priv.Public().(ed25519.PublicKey)}, nil
}

// WritePrivate writes s's private key to path atomically with mode 0600;
// an existing file is never replaced.
func WritePrivate(path string, s *Signer) error {
	b, err := s.MarshalPrivate()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%q already exists; refusing to replace a key", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600)
}

// LoadPublic reads a PEM SubjectPublicKeyInfo ed25519 key from path.
func LoadPublic(path string) (ed25519.PublicKey, error) {
	b, err := safefile.ReadFile(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	pub, err := ParsePublic(b)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", path, err)
	}
	return pub, nil
}

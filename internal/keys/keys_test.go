package keys_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/testenv"
)

// TestIDIsSHA256OfSPKI checks the key id against OpenSSL: the SHA-256 of
// the DER SubjectPublicKeyInfo that `openssl pkey -pubin -outform DER`
// writes from the PEM this package exports.
func TestIDIsSHA256OfSPKI(t *testing.T) {
	needOpenSSL(t)
	s, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "k.pub")
	if err := os.WriteFile(pemFile, keys.MarshalPublic(s.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `openssl pkey -pubin -in "$1" -outform DER | openssl dgst -sha256 -r`, "sh", pemFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	want := strings.Fields(string(out))[0]
	if got := keys.ID(s.PublicKey()); got != want {
		t.Fatalf("ID = %s, openssl says %s", got, want)
	}
}

// TestPrivateKeyRoundTripAndOpenSSL writes a private key, reads it back,
// and has OpenSSL derive the same public key from the file.
func TestPrivateKeyRoundTripAndOpenSSL(t *testing.T) {
	needOpenSSL(t)
	s, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "k.key")
	if err := keys.WritePrivate(p, s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	back, err := keys.LoadPrivate(p)
	if err != nil {
		t.Fatal(err)
	}
	if !back.PublicKey().Equal(s.PublicKey()) {
		t.Fatal("public key changed through the file")
	}
	out, err := exec.Command("openssl", "pkey", "-in", p, "-pubout").Output()
	if err != nil {
		t.Fatalf("openssl cannot read the private key: %v", err)
	}
	if !bytes.Equal(out, keys.MarshalPublic(s.PublicKey())) {
		t.Fatalf("openssl derives\n%s\nwe export\n%s", out, keys.MarshalPublic(s.PublicKey()))
	}
	if err := keys.WritePrivate(p, s); err == nil {
		t.Fatal("WritePrivate replaced an existing key")
	}
}

// TestWidePermissionsRefused: a private key readable by group or others is
// refused before it is parsed.
func TestWidePermissionsRefused(t *testing.T) {
	s, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "k.key")
	if err := keys.WritePrivate(p, s); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := keys.LoadPrivate(p)
		var pe *keys.PermissionError
		if !errors.As(err, &pe) {
			t.Fatalf("mode %04o: err = %v, want a PermissionError", mode, err)
		}
	}
	if err := os.Chmod(p, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.LoadPrivate(p); err != nil {
		t.Fatalf("mode 0400 refused: %v", err)
	}
}

func TestParseRefusesOtherKeys(t *testing.T) {
	s, _ := keys.Generate()
	pub := keys.MarshalPublic(s.PublicKey())
	priv, _ := s.MarshalPrivate()
	cases := map[string][]byte{
		"empty":             nil,
		"trailing data":     append(append([]byte{}, pub...), "junk"...),
		"private as public": priv,
		"rsa":               []byte("-----BEGIN PUBLIC KEY-----\nMFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAMq3QtpoCMfoBq2ie32uDgXQZ6v6kw6/\nCgsyQc2WJ3Xh3Yp+r8pYHqYQWmMOdKhybIw8Sk5kJzqTn7s8Aq6q7dUCAwEAAQ==\n-----END PUBLIC KEY-----\n"),
	}
	for name, b := range cases {
		if _, err := keys.ParsePublic(b); err == nil {
			t.Errorf("%s: ParsePublic accepted it", name)
		}
	}
	if _, err := keys.ParsePrivate(pub); err == nil {
		t.Error("ParsePrivate accepted a public key")
	}
}

func TestSignVerify(t *testing.T) {
	s, _ := keys.Generate()
	ctx := context.Background()
	sig, err := s.Sign(ctx, []byte("m"))
	if err != nil {
		t.Fatal(err)
	}
	v := keys.Verifier(s.PublicKey())
	if err := v.Verify(ctx, []byte("m"), sig); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(ctx, []byte("n"), sig); err == nil {
		t.Fatal("signature verified over other data")
	}
	if _, err := v.Sign(ctx, []byte("m")); err == nil {
		t.Fatal("a verifier signed")
	}
	if len(sig) != ed25519.SignatureSize {
		t.Fatalf("signature is %d bytes", len(sig))
	}
}

func FuzzParse(f *testing.F) {
	s, _ := keys.Generate()
	f.Add(keys.MarshalPublic(s.PublicKey()))
	priv, _ := s.MarshalPrivate()
	f.Add(priv)
	f.Fuzz(func(t *testing.T, b []byte) {
		if pub, err := keys.ParsePublic(b); err == nil && len(pub) != ed25519.PublicKeySize {
			t.Fatalf("public key of %d bytes accepted", len(pub))
		}
		if s, err := keys.ParsePrivate(b); err == nil && len(s.PublicKey()) != ed25519.PublicKeySize {
			t.Fatal("bad private key accepted")
		}
	})
}

func needOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		testenv.Missing(t, "openssl", "apt-get install -y openssl (scripts/deps.sh installs it with ca-certificates)")
	}
}

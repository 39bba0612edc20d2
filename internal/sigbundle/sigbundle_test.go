package sigbundle

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/keys"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

func signed(t testing.TB) (*dsse.Envelope, *keys.Signer) {
	t.Helper()
	k, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	s, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	env, err := s.SignPayload(context.Background(), "application/vnd.in-toto+json", []byte(`{"_type":"https://in-toto.io/Statement/v1"}`))
	if err != nil {
		t.Fatal(err)
	}
	return env, k
}

// TestRoundTrip: Wrap keeps the signature and payload, names the key only
// by the hint, and Unwrap returns them; the unwrapped envelope verifies.
func TestRoundTrip(t *testing.T) {
	env, k := signed(t)
	id := keys.ID(k.PublicKey())
	b, err := Wrap(env, id)
	if err != nil {
		t.Fatal(err)
	}
	if env.Signatures[0].KeyID != id {
		t.Fatal("Wrap changed the envelope it was given")
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || raw["mediaType"] != MediaType {
		t.Fatalf("bundle %s: %v", b, err)
	}
	got, hint, err := Unwrap(b)
	if err != nil || hint != id || got.Signatures[0].KeyID != "" || got.Signatures[0].Sig != env.Signatures[0].Sig || got.Payload != env.Payload {
		t.Fatalf("unwrap: %+v %q %v", got, hint, err)
	}
	v, err := dsse.NewEnvelopeVerifier(keys.Verifier(k.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), got); err != nil {
		t.Fatalf("the unwrapped envelope does not verify: %v", err)
	}
}

func TestRefused(t *testing.T) {
	env, k := signed(t)
	good, err := Wrap(env, keys.ID(k.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	two := *env
	two.Signatures = append(two.Signatures, env.Signatures[0])
	if _, err := Wrap(&two, "x"); err == nil {
		t.Fatal("Wrap took two signatures")
	}
	for _, tc := range []struct{ name, bundle, want string }{
		{"not JSON", "{", "not a Sigstore bundle"},
		{"another media type", strings.Replace(string(good), "v0.3", "v0.1", 1), "media type"},
		{"no public key", strings.Replace(string(good), `"publicKey"`, `"x509CertificateChain"`, 1), "names no public key"},
		{"no envelope", strings.Replace(string(good), `"dsseEnvelope"`, `"messageSignature"`, 1), "no DSSE envelope"},
		{"no signature", string(bytes.Replace(good, []byte(`"signatures": [`), []byte(`"signatures": [], "x": [`), 1)), "carries 0 signatures"},
	} {
		if _, _, err := Unwrap([]byte(tc.bundle)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzUnwrap: a bundle is untrusted input; Unwrap never panics, and what
// it accepts has one signature and a key hint.
func FuzzUnwrap(f *testing.F) {
	env, k := signed(f)
	good, _ := Wrap(env, keys.ID(k.PublicKey()))
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		env, _, err := Unwrap(b)
		if err == nil && len(env.Signatures) != 1 {
			t.Fatalf("accepted %d signatures", len(env.Signatures))
		}
	})
}

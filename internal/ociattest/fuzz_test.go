package ociattest_test

import (
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/ociattest"
)

// FuzzVerify feeds arbitrary envelopes, as a registry or a layout could
// hold them, to the verification of an image under the production
// profile: it must never panic and never admit an image whose envelopes
// a trusted key did not make.
func FuzzVerify(f *testing.F) {
	k, err := keys.FromSeed(make([]byte, 32))
	if err != nil {
		f.Fatal(err)
	}
	img := digest.Of([]byte("image"))
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	good, err := ociattest.Attest(k, ociattest.Signature, "lab/dlrm", img, ociattest.SignaturePayload("lab/dlrm@"+img.String(), now))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}`))
	f.Add([]byte(`{}`))
	tf := trustFor(f, k)
	other, _ := keys.Generate()
	untrusted := trustFor(f, other)
	f.Fuzz(func(t *testing.T, b []byte) {
		found := []ociattest.Found{{Where: "fuzz", Envelope: b}}
		v, _, err := ociattest.Verify(untrusted, ociattest.PolicyOf(untrusted.Image), img, found, now)
		if err == nil || v != nil {
			t.Fatalf("an envelope no trusted key made admitted the image: %+v", v)
		}
		ociattest.Verify(tf, ociattest.PolicyOf(tf.Image), img, found, now)
	})
}

package runs

import (
	"fmt"
	"time"

	vsa "github.com/in-toto/attestation/go/predicates/vsa/v1"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Names of a Verification Summary Attestation that `repro runs verify
// --vsa` writes.
const (
	VSAPredicateType = "https://slsa.dev/verification_summary/v1"
	// VerifierID names repro's run verification as the VSA's verifier.
	VerifierID = "https://reprolab.github.io/repro/verifier/run/v1"
	// VerifyPolicyURI names the checks of docs/provenance.md
	// ("Verifying"); the VSA's policy digest is the trust file's SHA-256.
	VerifyPolicyURI = "https://reprolab.github.io/repro/policy/run-verify/v1"
)

// VSA result values and levels.
const (
	VSAPassed = "PASSED"
	VSAFailed = "FAILED"
)

// VSAInput is what a Verification Summary Attestation states besides the
// verification itself.
type VSAInput struct {
	// Version is the verifying repro's version.
	Version string
	// TrustFile holds the bytes of the trust file the run was checked
	// against (the policy).
	TrustFile []byte
	// Now is the verification time.
	Now time.Time
}

// VSA returns the in-toto statement (JSON) of a Verification Summary
// Attestation of v: subjects record.json and every other file of the run
// but the record's envelope, with the digests they had when checked;
// result PASSED when v has no problems (verified level SLSA_BUILD_LEVEL_1
// when the run's SLSA provenance verified, SLSA_BUILD_LEVEL_0 for runs
// without one), else FAILED; the record's envelope and the standard
// attestations as input attestations; the trust file's digest as the
// policy's.
func VSA(v *Verification, in VSAInput) ([]byte, error) {
	if v == nil || v.Record == nil {
		return nil, fmt.Errorf("no verification to summarize")
	}
	subjects := []File{{Path: recordFile, SHA256: v.RecordSHA256}}
	for _, p := range sortedPaths(v.Files) {
		subjects = append(subjects, v.Files[p])
	}
	sum := &vsa.VerificationSummary{
		Verifier:     &vsa.VerificationSummary_Verifier{Id: VerifierID},
		TimeVerified: timestamppb.New(in.Now.UTC()),
		ResourceUri:  "urn:repro:run:" + v.Record.ID,
		Policy: &vsa.VerificationSummary_Policy{
			Uri: VerifyPolicyURI, Digest: map[string]string{"sha256": digest.Of(in.TrustFile).Hex()},
		},
		SlsaVersion: "1.0",
	}
	if v.EnvelopeSHA256 != "" {
		sum.InputAttestations = append(sum.InputAttestations, &vsa.VerificationSummary_InputAttestation{Uri: envelopeFile, Digest: map[string]string{"sha256": v.EnvelopeSHA256}})
	}
	provenance := false
	for _, a := range v.Attestations {
		sum.InputAttestations = append(sum.InputAttestations, &vsa.VerificationSummary_InputAttestation{Uri: a.Path, Digest: map[string]string{"sha256": a.SHA256}})
		provenance = provenance || a.PredicateType == ProvenancePredicateType
	}
	switch {
	case len(v.Problems) > 0:
		sum.VerificationResult, sum.VerifiedLevels = VSAFailed, []string{VSAFailed}
	case provenance:
		sum.VerificationResult, sum.VerifiedLevels = VSAPassed, []string{"SLSA_BUILD_LEVEL_1"}
	default:
		sum.VerificationResult, sum.VerifiedLevels = VSAPassed, []string{"SLSA_BUILD_LEVEL_0"}
	}
	pred, err := structOf(sum)
	if err != nil {
		return nil, err
	}
	// The proto of the in-toto Go types lacks the spec's verifier.version.
	version, err := structpb.NewValue(map[string]any{"repro": in.Version})
	if err != nil {
		return nil, err
	}
	pred.GetFields()["verifier"].GetStructValue().Fields["version"] = version
	return statementOf(subjects, VSAPredicateType, pred)
}

// WriteVSA signs the VSA of v with k as a DSSE envelope in a Sigstore
// bundle (internal/sigbundle) and writes it to out atomically.
func WriteVSA(k *keys.Signer, out string, v *Verification, in VSAInput) error {
	payload, err := VSA(v, in)
	if err != nil {
		return err
	}
	env, err := signBundle(k, payload)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(out, env, 0o644); err != nil {
		return fmt.Errorf("cannot write the verification summary %q: %v", out, err)
	}
	return nil
}

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
	// ("Verifying"): the record's signature by a key of the trust file and
	// the run's files as recorded, and every Required VSACheck; the VSA's
	// policy digest is the trust file's SHA-256.
	VerifyPolicyURI = "https://reprolab.github.io/repro/policy/run-verify/v2"
)

// VSA properties (verifiedLevels values besides the SLSA build level)
// that name what a VSA checked.
const (
	// VSARecordVerified: the record is signed by a key the trust file
	// trusts for run records, and the run's files are the recorded ones.
	VSARecordVerified = "REPRO_RUN_RECORD_VERIFIED"
	// VSAScoresFromVerdicts: a HumanEval run's summary (tasks, samples,
	// pass@k) is what the verdicts of its results file give.
	VSAScoresFromVerdicts = "REPRO_SCORES_FROM_VERDICTS"
	// VSAReferenceProfile: a HumanEval run matches the reference profile
	// of its dataset's board in the verifier's REPRO_HOME, so the board
	// ranks it (report.NotRankedReasons finds nothing).
	VSAReferenceProfile = "REPRO_BOARD_REFERENCE_PROFILE"
)

// VSACheck is a check of a run's claims that the verifier made besides its
// record's signature and files. A VSA states Property among its verified
// levels only when the check Passed; a Required check that did not pass
// makes the verification FAILED.
type VSACheck struct {
	Property string
	Passed   bool
	Required bool
}

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
	// Checks are the checks of the run's claims that were made (none for
	// a run whose claims were not checked: then the VSA states only the
	// record's verification).
	Checks []VSACheck
}

// VSA returns the in-toto statement (JSON) of a Verification Summary
// Attestation of v: subjects record.json and every other file of the run
// but the record's envelope, with the digests they had when checked;
// result PASSED when v has no problems and every required check of
// in.Checks passed, else FAILED (verified levels ["FAILED"]). A PASSED
// VSA's verified levels name exactly what was checked: SLSA_BUILD_LEVEL_1
// when the run's SLSA provenance verified (SLSA_BUILD_LEVEL_0 for runs
// without one), VSARecordVerified, and the Property of each check that
// passed, nothing else. The record's envelope and the standard
// attestations are the input attestations; the trust file's digest is the
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
	failed := len(v.Problems) > 0
	for _, c := range in.Checks {
		failed = failed || c.Required && !c.Passed
	}
	switch {
	case failed:
		sum.VerificationResult, sum.VerifiedLevels = VSAFailed, []string{VSAFailed}
	case provenance:
		sum.VerificationResult, sum.VerifiedLevels = VSAPassed, []string{"SLSA_BUILD_LEVEL_1", VSARecordVerified}
	default:
		sum.VerificationResult, sum.VerifiedLevels = VSAPassed, []string{"SLSA_BUILD_LEVEL_0", VSARecordVerified}
	}
	if !failed {
		for _, c := range in.Checks {
			if c.Passed {
				sum.VerifiedLevels = append(sum.VerifiedLevels, c.Property)
			}
		}
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

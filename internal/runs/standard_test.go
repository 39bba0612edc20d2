package runs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	testresult "github.com/in-toto/attestation/go/predicates/test_result/v0"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/sigbundle"
	"github.com/reprolab/repro/internal/trust"
	"google.golang.org/protobuf/encoding/protojson"
)

// readAttestation returns the statement of the standard attestation name
// of the run folder dir, and the bundle's key hint and signature key id.
func readAttestation(t *testing.T, dir, name string) (*intoto.Statement, string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	env, hint, err := sigbundle.Unwrap(b)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	return &st, hint, env.Signatures[0].KeyID
}

func subjectNames(st *intoto.Statement) []string {
	var out []string
	for _, s := range st.GetSubject() {
		out = append(out, s.GetName())
	}
	slices.Sort(out)
	return out
}

// TestStandardAttestations checks what a finished run carries beside its
// record: a SLSA Provenance v1 and an in-toto Test Result over its
// outputs, in Sigstore bundles signed with the run key, that verify.
func TestStandardAttestations(t *testing.T) {
	home, r := finishedRun(t)
	v, err := r.VerifyWith(mustTrust(t, home))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Attestations) != 2 || v.Attestations[0].Path != ProvenanceFile || v.Attestations[1].Path != TestResultFile {
		t.Fatalf("verified attestations %+v", v.Attestations)
	}
	local := keys.ID(mustLocal(t, home).PublicKey())
	outputs := []string{"results.json", "workspace/samples.jsonl"}

	st, hint, sigKeyID := readAttestation(t, r.Dir, ProvenanceFile)
	if st.GetPredicateType() != ProvenancePredicateType || !slices.Equal(subjectNames(st), outputs) || hint != local || sigKeyID != "" {
		t.Fatalf("provenance: type %q, subjects %q, hint %q, keyid %q", st.GetPredicateType(), subjectNames(st), hint, sigKeyID)
	}
	for _, s := range st.GetSubject() {
		d, _, err := digest.File(filepath.Join(r.Dir, filepath.FromSlash(s.GetName())))
		if err != nil || d.Hex() != s.GetDigest()["sha256"] {
			t.Fatalf("subject %s: %s, file %s (%v)", s.GetName(), s.GetDigest()["sha256"], d.Hex(), err)
		}
	}
	pb, _ := protojson.Marshal(st.GetPredicate())
	var p slsa.Provenance
	if err := protojson.Unmarshal(pb, &p); err != nil || p.Validate() != nil {
		t.Fatalf("provenance predicate: %v %v", err, p.Validate())
	}
	bd := p.GetBuildDefinition()
	if bd.GetBuildType() != RunBuildType || bd.GetExternalParameters().AsMap()["kind"] != "humaneval" || p.GetRunDetails().GetMetadata().GetInvocationId() != r.ID {
		t.Fatalf("provenance: %v", &p)
	}
	deps := bd.GetResolvedDependencies()
	if len(deps) != 1 || deps[0].GetName() != "catalog/humanevalplus-v0.1.10" || deps[0].GetDigest()["sha256"] != strings.Repeat("a", 64) {
		t.Fatalf("resolved dependencies %v", deps)
	}

	st, hint, _ = readAttestation(t, r.Dir, TestResultFile)
	if st.GetPredicateType() != TestResultPredicateType || !slices.Equal(subjectNames(st), outputs) || hint != local {
		t.Fatalf("test result: type %q, subjects %q", st.GetPredicateType(), subjectNames(st))
	}
	pb, _ = protojson.Marshal(st.GetPredicate())
	var tr testresult.TestResult
	if err := protojson.Unmarshal(pb, &tr); err != nil || tr.GetResult() != TestPassed || tr.GetConfiguration()[0].GetName() != "repro/humaneval" {
		t.Fatalf("test result predicate %v (%v)", &tr, err)
	}
}

func mustTrust(t *testing.T, home string) *trust.File {
	t.Helper()
	tf, err := LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

// TestTestResultNamesTheTests checks that the tests a workload names are
// in the Test Result, which fails when one failed, with the results file
// as configuration.
func TestTestResultNamesTheTests(t *testing.T) {
	home := t.TempDir()
	r, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), []byte(`{"eval":{}}`), 0o644)
	rec := r.NewRecord("test")
	rec.Summary = map[string]any{"pass@1": 0.5}
	rec.Tests = &Tests{Passed: []string{"HumanEval/0"}, Failed: []string{"HumanEval/1"}, Results: "eval_results.json"}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	st, _, _ := readAttestation(t, r.Dir, TestResultFile)
	pb, _ := protojson.Marshal(st.GetPredicate())
	var tr testresult.TestResult
	if err := protojson.Unmarshal(pb, &tr); err != nil {
		t.Fatal(err)
	}
	cfg := tr.GetConfiguration()
	last := cfg[len(cfg)-1]
	if tr.GetResult() != TestFailed || !slices.Equal(tr.GetPassedTests(), []string{"HumanEval/0"}) || !slices.Equal(tr.GetFailedTests(), []string{"HumanEval/1"}) ||
		last.GetName() != "eval_results.json" || last.GetAnnotations().AsMap()["role"] != "results" {
		t.Fatalf("test result %v", &tr)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir, recordFile)); bytes.Contains(b, []byte("HumanEval/1")) {
		t.Fatal("the tests were written into record.json")
	}
	if _, _, err := r.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestRunWithoutOutputsHasNoAttestations: a statement needs a subject, so
// a run that left no file carries only its record, and verifies.
func TestRunWithoutOutputsHasNoAttestations(t *testing.T) {
	home := t.TempDir()
	r, err := Create(home, "mllog")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(r.NewRecord("test"), 3); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{ProvenanceFile, TestResultFile} {
		if _, err := os.Stat(filepath.Join(r.Dir, n)); err == nil {
			t.Fatalf("%s written for a run without outputs", n)
		}
	}
	v, err := r.VerifyWith(mustTrust(t, home))
	if err != nil || len(v.Attestations) != 0 {
		t.Fatalf("%+v %v", v, err)
	}
}

// resignAttestation replaces the statement of attestation name with
// edit's result, signed with signer (the run key when nil) as a Sigstore
// bundle naming hint (the signer's key id when ""), and re-signs the
// record with the run key so that it names the new bytes: what a holder
// of a trusted key could write. Only the attestation check can refuse it.
func resignAttestation(t *testing.T, home, dir, name string, signer *keys.Signer, hint string, edit func(st *intoto.Statement)) {
	t.Helper()
	st, _, _ := readAttestation(t, dir, name)
	edit(st)
	payload, err := protojson.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if signer == nil {
		signer = mustLocal(t, home)
	}
	env, err := sign(signer, PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	if hint == "" {
		hint = keys.ID(signer.PublicKey())
	}
	b, err := sigbundle.Wrap(env, hint)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	resign(t, home, dir, func(rst *intoto.Statement) {
		for _, s := range rst.Subject {
			if s.Name == name {
				s.Digest["sha256"] = digest.Of(b).Hex()
			}
		}
	})
}

// editPredicate rewrites the predicate of st through its JSON form.
func editPredicate(t *testing.T, st *intoto.Statement, edit func(p map[string]any)) {
	t.Helper()
	p := st.GetPredicate().AsMap()
	edit(p)
	b, _ := json.Marshal(p)
	if err := protojson.Unmarshal(b, st.GetPredicate()); err != nil {
		t.Fatal(err)
	}
}

// TestAttestationTampering makes one change to a standard attestation
// and checks that verify exits 4 naming it. The re-signed cases are
// signed with a trusted key and named by a re-signed record, so the
// record check alone would pass them.
func TestAttestationTampering(t *testing.T) {
	other, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		tamper     func(t *testing.T, home, dir string)
	}{
		{"a byte of the provenance", ProvenanceFile + ": content changed", func(t *testing.T, _, dir string) {
			p := filepath.Join(dir, ProvenanceFile)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			os.WriteFile(p, b, 0o644)
		}},
		{"the test result removed", TestResultFile + ": signed file is missing", func(t *testing.T, _, dir string) {
			os.Remove(filepath.Join(dir, TestResultFile))
		}},
		{"an output left out of the provenance", ProvenanceFile + ": its subjects are not the run's signed outputs: results.json is not a subject", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, ProvenanceFile, nil, "", func(st *intoto.Statement) {
				st.Subject = slices.DeleteFunc(st.Subject, func(s *intoto.ResourceDescriptor) bool { return s.Name == "results.json" })
			})
		}},
		{"a forged digest in the test result", TestResultFile + ": its subjects are not the run's signed outputs: results.json has sha256", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, TestResultFile, nil, "", func(st *intoto.Statement) {
				for _, s := range st.Subject {
					if s.Name == "results.json" {
						s.Digest["sha256"] = strings.Repeat("0", 64)
					}
				}
			})
		}},
		{"a subject that is no output", ProvenanceFile + ": its subjects are not the run's signed outputs: record.json is not an output", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, ProvenanceFile, nil, "", func(st *intoto.Statement) {
				st.Subject = append(st.Subject, &intoto.ResourceDescriptor{Name: recordFile, Digest: map[string]string{"sha256": strings.Repeat("1", 64)}})
			})
		}},
		{"the provenance of another run", ProvenanceFile + ": is the provenance of run \"humaneval-20200101T000000Z-00000000\"", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, ProvenanceFile, nil, "", func(st *intoto.Statement) {
				editPredicate(t, st, func(p map[string]any) {
					p["runDetails"].(map[string]any)["metadata"].(map[string]any)["invocationId"] = "humaneval-20200101T000000Z-00000000"
				})
			})
		}},
		{"another build type", ProvenanceFile + ": build type \"https://example.org/build/v1\"", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, ProvenanceFile, nil, "", func(st *intoto.Statement) {
				editPredicate(t, st, func(p map[string]any) {
					p["buildDefinition"].(map[string]any)["buildType"] = "https://example.org/build/v1"
				})
			})
		}},
		{"a provenance that is no SLSA provenance", ProvenanceFile + ": not a valid SLSA provenance", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, ProvenanceFile, nil, "", func(st *intoto.Statement) {
				editPredicate(t, st, func(p map[string]any) { delete(p, "runDetails") })
			})
		}},
		{"swapped predicate types", TestResultFile + ": the signed statement has type", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, TestResultFile, nil, "", func(st *intoto.Statement) { st.PredicateType = ProvenancePredicateType })
		}},
		{"a result that is no result", TestResultFile + ": test result \"GREAT\" is not PASSED", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, TestResultFile, nil, "", func(st *intoto.Statement) {
				editPredicate(t, st, func(p map[string]any) { p["result"] = "GREAT" })
			})
		}},
		{"signed by another trusted key", ProvenanceFile + ": signed by key \"other\"", func(t *testing.T, home, dir string) {
			writeTrustFile(t, home, trust.NewKey("local", mustLocal(t, home).PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil),
				trust.NewKey("other", other.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil))
			resignAttestation(t, home, dir, ProvenanceFile, other, "", func(*intoto.Statement) {})
		}},
		{"signed by an untrusted key", ProvenanceFile + ": not signed by a trusted key", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, ProvenanceFile, other, "", func(*intoto.Statement) {})
		}},
		{"a bundle naming another key", TestResultFile + ": the bundle names key", func(t *testing.T, home, dir string) {
			resignAttestation(t, home, dir, TestResultFile, nil, keys.ID(other.PublicKey()), func(*intoto.Statement) {})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, r := finishedRun(t)
			if _, _, err := r.Verify(); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			tc.tamper(t, home, r.Dir)
			_, problems, err := r.Verify()
			if exitcode.Of(err) != exitcode.Integrity || len(problems) == 0 {
				t.Fatalf("not refused with exit 4: %v %v", problems, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not name the change (%q):\n%v", tc.want, err)
			}
		})
	}
}

// TestBundleAttestationsAreChecked exports a run whose provenance was
// re-signed with wrong subjects (and the record re-signed to name it):
// VerifyBundle reads the attestation from the bundle and refuses it.
func TestBundleAttestationsAreChecked(t *testing.T) {
	home, r := finishedRun(t)
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if _, err := Export(home, r.ID, bundle); err != nil {
		t.Fatal(err)
	}
	tf := mustTrust(t, home)
	if v, err := VerifyBundle(bundle, tf); err != nil || len(v.Attestations) != 2 {
		t.Fatalf("bundle: %+v %v", v, err)
	}
	resignAttestation(t, home, r.Dir, ProvenanceFile, nil, "", func(st *intoto.Statement) { st.Subject = st.Subject[:1] })
	entries := readTar(t, bundle)
	for i, e := range entries {
		if src, ok := strings.CutPrefix(e.h.Name, "run/"); ok && (src == ProvenanceFile || src == envelopeFile) {
			entries[i].data, _ = os.ReadFile(filepath.Join(r.Dir, src))
		}
	}
	forged := filepath.Join(t.TempDir(), "forged.tar")
	writeTar(t, forged, entries)
	_, err := VerifyBundle(forged, tf)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), ProvenanceFile+": its subjects are not the run's signed outputs") {
		t.Fatalf("forged bundle: %v", err)
	}
}

// TestVSA checks the Verification Summary Attestation of a run that
// verified and of one that did not.
func TestVSA(t *testing.T) {
	home, r := finishedRun(t)
	trustBytes, err := os.ReadFile(filepath.Join(home, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	tf := mustTrust(t, home)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	verifier, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	read := func(v *Verification) (*intoto.Statement, map[string]any) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "vsa.sigstore.json")
		if err := WriteVSA(verifier, out, v, VSAInput{Version: "v9.9.9", TrustFile: trustBytes, Now: now}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		env, hint, err := sigbundle.Unwrap(b)
		if err != nil || hint != keys.ID(verifier.PublicKey()) {
			t.Fatalf("vsa bundle: %v hint %q", err, hint)
		}
		vt := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("verifier", verifier.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
		if _, err := vt.Verify(env, trust.RunRecords, now); err != nil {
			t.Fatalf("the VSA does not verify with the verifier's key: %v", err)
		}
		payload, _ := env.DecodeB64Payload()
		var st intoto.Statement
		if err := protojson.Unmarshal(payload, &st); err != nil || st.Validate() != nil || st.GetPredicateType() != VSAPredicateType {
			t.Fatalf("vsa statement: %v %v", err, &st)
		}
		return &st, st.GetPredicate().AsMap()
	}

	v, err := r.VerifyWith(tf)
	if err != nil {
		t.Fatal(err)
	}
	st, p := read(v)
	want := []string{ProvenanceFile, recordFile, "results.json", TestResultFile, "workspace/samples.jsonl"}
	if got := subjectNames(st); !slices.Equal(got, want) {
		t.Fatalf("vsa subjects %q, want %q", got, want)
	}
	policy := p["policy"].(map[string]any)
	inputs := p["inputAttestations"].([]any)
	if p["verificationResult"] != VSAPassed || p["verifiedLevels"].([]any)[0] != "SLSA_BUILD_LEVEL_1" || p["resourceUri"] != "urn:repro:run:"+r.ID ||
		policy["digest"].(map[string]any)["sha256"] != digest.Of(trustBytes).Hex() || len(inputs) != 3 ||
		p["verifier"].(map[string]any)["version"].(map[string]any)["repro"] != "v9.9.9" || p["timeVerified"] != "2026-12-01T12:00:00Z" {
		t.Fatalf("vsa predicate %v", p)
	}

	os.WriteFile(filepath.Join(r.Dir, "results.json"), []byte(`{"pass":0}`), 0o644)
	v, err = r.VerifyWith(tf)
	if err == nil {
		t.Fatal("tampered run verified")
	}
	_, p = read(v)
	if p["verificationResult"] != VSAFailed || p["verifiedLevels"].([]any)[0] != VSAFailed {
		t.Fatalf("vsa of a tampered run: %v", p)
	}
}

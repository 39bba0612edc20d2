package runs

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	testresult "github.com/in-toto/attestation/go/predicates/test_result/v0"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/sigbundle"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Standard attestations of a run. Beside its record, a run that left
// output files carries two in-toto statements in the formats the supply
// chain tools verify, over the same subjects (every output file of the
// run folder, by SHA-256), each a DSSE envelope signed with the same run
// key in a Sigstore bundle v0.3 (internal/sigbundle), the form cosign
// verify-blob-attestation --bundle reads offline with a public key:
//
//	provenance.sigstore.json   SLSA Provenance v1 (ProvenancePredicateType)
//	test-result.sigstore.json  in-toto Test Result v0.1 (TestResultPredicateType)
//
// They are ordinary files of the run folder: the record's statement names
// them with their digests, so they are authenticated twice. Their
// subjects are the run's outputs, which excludes record.json, its
// envelope and the two attestations themselves (the record names the
// attestations, so they cannot name the record). A workload must not
// write files of these names; Finish replaces them.
const (
	ProvenanceFile = "provenance.sigstore.json"
	TestResultFile = "test-result.sigstore.json"

	ProvenancePredicateType = "https://slsa.dev/provenance/v1"
	TestResultPredicateType = "https://in-toto.io/attestation/test-result/v0.1"

	// RunBuildType is the SLSA build type of every run kind: external
	// parameters kind, command and limits; internal parameters host and
	// sandbox; resolved dependencies as docs/provenance.md lists them.
	RunBuildType = "https://reprolab.github.io/repro/buildtype/run/v1"
	// RunBuilderID names repro, run on the host the record describes, as
	// the SLSA builder.
	RunBuilderID = "https://reprolab.github.io/repro/builder/run/v1"

	// DigestReproTree is the DigestSet algorithm of repro's tree digest
	// (digest.Tree, lowercase hex), used for source trees such as the
	// EvalPlus engine and the HumanEval harness.
	DigestReproTree = "reproTree"
	// DigestSampleFolder is the DigestSet algorithm of a samples folder:
	// SHA-256 over "<flat name> <sha256 hex>\n" per sample (lowercase hex).
	DigestSampleFolder = "reproSampleFolder"
)

// Test result values.
const (
	TestPassed = "PASSED"
	TestFailed = "FAILED"
)

// Tests is what a run tested, for its Test Result attestation: the names
// of the tests that passed and that failed, and the results file in the
// run folder that holds the details. It is not part of record.json.
type Tests struct {
	Passed  []string
	Failed  []string
	Results string
}

// isAttestationFile reports whether p (a path in a run folder) is one of
// the standard attestations.
func isAttestationFile(p string) bool { return p == ProvenanceFile || p == TestResultFile }

// outputsOf are the files of a run that the standard attestations name:
// all but the attestations themselves.
func outputsOf(files []File) []File {
	var out []File
	for _, f := range files {
		if !isAttestationFile(f.Path) {
			out = append(out, f)
		}
	}
	return out
}

// writeAttestations signs the SLSA provenance and the test result of rec
// over outputs with k and writes them into the run folder, and returns
// them as files of the folder. A run without outputs gets none (a
// statement needs a subject).
func (r *Run) writeAttestations(k *keys.Signer, rec *Record, outputs []File) ([]File, error) {
	if len(outputs) == 0 {
		return nil, nil
	}
	deps := dependencies(rec)
	prov, err := provenancePredicate(rec, deps)
	if err != nil {
		return nil, err
	}
	tr, err := testResultPredicate(rec, deps, outputs)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, a := range []struct {
		name, predicateType string
		predicate           proto.Message
	}{{ProvenanceFile, ProvenancePredicateType, prov}, {TestResultFile, TestResultPredicateType, tr}} {
		payload, err := statementOf(outputs, a.predicateType, a.predicate)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		env, err := signBundle(k, payload)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		if err := atomicfile.WriteFile(filepath.Join(r.Dir, a.name), env, 0o644); err != nil {
			return nil, err
		}
		out = append(out, File{Path: a.name, SHA256: digest.Of(env).Hex(), Size: int64(len(env))})
	}
	return out, nil
}

// statementOf is the JSON of an in-toto Statement v1 over subjects whose
// predicate, of type predicateType, is the proto message pred.
func statementOf(subjects []File, predicateType string, pred proto.Message) ([]byte, error) {
	ps, err := structOf(pred)
	if err != nil {
		return nil, err
	}
	var subj []*intoto.ResourceDescriptor
	for _, f := range subjects {
		subj = append(subj, &intoto.ResourceDescriptor{Name: f.Path, Digest: map[string]string{"sha256": f.SHA256}})
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, Subject: subj, PredicateType: predicateType, Predicate: ps}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the statement is invalid: %v", err)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(st)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// structOf converts a predicate message to the Struct a Statement holds.
func structOf(m proto.Message) (*structpb.Struct, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var s structpb.Struct
	if err := protojson.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// jsonValue is v as generic JSON values (maps, slices, float64, ...), or
// nil when v is nil or cannot be encoded.
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if strictjson.DecodeOpen(b, &out) != nil {
		return nil
	}
	return out
}

// structFrom builds a Struct of the non-nil entries of m.
func structFrom(m map[string]any) (*structpb.Struct, error) {
	clean := map[string]any{}
	for k, v := range m {
		if v = jsonValue(v); v != nil {
			clean[k] = v
		}
	}
	return structpb.NewStruct(clean)
}

// provenancePredicate is the SLSA Provenance v1 of a run.
func provenancePredicate(rec *Record, deps []*intoto.ResourceDescriptor) (*slsa.Provenance, error) {
	ext, err := structFrom(map[string]any{"kind": rec.Kind, "command": rec.Command, "limits": rec.Limits})
	if err != nil {
		return nil, fmt.Errorf("external parameters: %v", err)
	}
	internal, err := structFrom(map[string]any{"host": rec.Host, "sandbox": rec.Sandbox})
	if err != nil {
		return nil, fmt.Errorf("internal parameters: %v", err)
	}
	version := map[string]string{"repro": rec.Repro.Version, "go": rec.Repro.Go}
	if rec.Repro.Revision != "" {
		version["vcs_revision"] = rec.Repro.Revision
	}
	p := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{
			BuildType: RunBuildType, ExternalParameters: ext, InternalParameters: internal, ResolvedDependencies: deps,
		},
		RunDetails: &slsa.RunDetails{
			Builder: &slsa.Builder{Id: RunBuilderID, Version: version},
			Metadata: &slsa.BuildMetadata{
				InvocationId: rec.ID, StartedOn: timestamppb.New(rec.StartedAt), FinishedOn: timestamppb.New(rec.FinishedAt),
			},
		},
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the SLSA provenance is invalid: %v", err)
	}
	return p, nil
}

// testResultPredicate is the Test Result of a run: the tests the workload
// names (rec.Tests), or else the outcome of the run as a whole, with the
// run's procedure, its inputs and its results file as configuration.
func testResultPredicate(rec *Record, deps []*intoto.ResourceDescriptor, outputs []File) (*testresult.TestResult, error) {
	procedure, err := structFrom(map[string]any{"kind": rec.Kind, "command": rec.Command, "status": rec.Status, "exit_code": rec.ExitCode})
	if err != nil {
		return nil, err
	}
	config := []*intoto.ResourceDescriptor{{Name: "repro/" + rec.Kind, Uri: RunBuildType, Annotations: procedure}}
	config = append(config, deps...)
	tr := &testresult.TestResult{Result: TestPassed}
	if rec.Status != statusOf(0) {
		tr.Result = TestFailed
	}
	if t := rec.Tests; t != nil {
		tr.PassedTests, tr.FailedTests = t.Passed, t.Failed
		if len(t.Failed) > 0 {
			tr.Result = TestFailed
		}
		for _, f := range outputs {
			if f.Path != t.Results {
				continue
			}
			ann, err := structFrom(map[string]any{"role": "results", "summary": rec.Summary})
			if err != nil {
				return nil, err
			}
			config = append(config, &intoto.ResourceDescriptor{Name: f.Path, Digest: map[string]string{"sha256": f.SHA256}, MediaType: "application/json", Annotations: ann})
		}
	}
	for _, c := range config {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("test result configuration %q: %v", c.GetName(), err)
		}
	}
	tr.Configuration = config
	return tr, nil
}

// dependencies are the inputs a record states with their digests, as
// SLSA resolved dependencies: the catalog assets ("catalog/<id>"), the
// evaluator image ("evaluator-image/id", "/manifest", "/sbom"), the
// harness ("harness", from limits.harness_digest), the samples ("samples",
// from extra.samples) and the logs ("logs/<n>", from extra.logs). An
// entry whose digest is not a SHA-256 is left out.
func dependencies(rec *Record) []*intoto.ResourceDescriptor {
	var out []*intoto.ResourceDescriptor
	add := func(name, uri, alg, hexDigest string, ann map[string]any) {
		d, err := digest.Parse(strings.ToLower(hexDigest))
		if err != nil {
			return
		}
		rd := &intoto.ResourceDescriptor{Name: name, Uri: uri, Digest: map[string]string{alg: d.Hex()}}
		if len(ann) > 0 {
			if s, err := structFrom(ann); err == nil {
				rd.Annotations = s
			}
		}
		out = append(out, rd)
	}
	for _, a := range rec.Assets {
		alg, ann := "sha256", map[string]any{}
		if a.Tree {
			alg = DigestReproTree
		}
		if a.Size > 0 {
			ann["size"] = a.Size
		}
		add("catalog/"+a.ID, "", alg, a.SHA256, ann)
	}
	if img, ok := jsonValue(rec.Image).(map[string]any); ok {
		for _, f := range [][2]string{{"id", "evaluator-image/id"}, {"manifest_digest", "evaluator-image/manifest"}, {"sbom_digest", "evaluator-image/sbom"}} {
			if s, ok := img[f[0]].(string); ok {
				add(f[1], "", "sha256", s, nil)
			}
		}
	}
	if lim, ok := jsonValue(rec.Limits).(map[string]any); ok {
		if s, ok := lim["harness_digest"].(string); ok {
			add("harness", "", DigestReproTree, s, nil)
		}
	}
	// The record being written holds its extra as the workload's own
	// value: its subject is decoded from that value's JSON.
	extra, _ := jsonValue(rec.Extra).(map[string]any)
	if s := subjectOf(extra).Samples; s != nil {
		alg := "sha256"
		if s.Format == "folder" {
			alg = DigestSampleFolder
		}
		add("samples", "", alg, s.SHA256, map[string]any{"path": s.Path})
	}
	if logs, ok := extra["logs"].([]any); ok {
		for i, l := range logs {
			m, _ := l.(map[string]any)
			h, _ := m["sha256"].(string)
			p, _ := m["path"].(string)
			add("logs/"+strconv.Itoa(i), "", "sha256", h, map[string]any{"path": p})
		}
	}
	return out
}

// attestationCheck is what checkAttestations needs of a run's check.
type attestationCheck struct {
	record *Record
	// signed maps every file the record's statement names to its digest.
	signed map[string]string
	// read returns the bytes of an attestation file, nil when absent.
	read func(name string) []byte
	at   time.Time
}

// checkAttestations verifies the standard attestations the record's
// statement names: each signed by the key that signed the record (v.Key),
// an in-toto statement of its predicate type whose subjects are exactly
// the record's signed outputs, and a predicate about this run. It adds
// what it finds to v.Problems and names the verified ones in
// v.Attestations.
func (v *Verification) checkAttestations(t *trust.File, c attestationCheck) {
	want := map[string]string{}
	for n, h := range c.signed {
		if n != recordFile && !isAttestationFile(n) {
			want[n] = h
		}
	}
	for _, a := range []struct{ name, predicateType string }{{ProvenanceFile, ProvenancePredicateType}, {TestResultFile, TestResultPredicateType}} {
		if _, listed := c.signed[a.name]; !listed {
			continue
		}
		b := c.read(a.name)
		if b == nil {
			continue // reported as a missing signed file
		}
		if err := checkAttestation(t, v, c, a.predicateType, b, want); err != nil {
			v.add(a.name, "%v", err)
			continue
		}
		v.Attestations = append(v.Attestations, Attestation{Path: a.name, PredicateType: a.predicateType, SHA256: digest.Of(b).Hex()})
	}
}

// Attestation is a standard attestation of a run that verified.
type Attestation struct {
	Path          string `json:"path"`
	PredicateType string `json:"predicate_type"`
	SHA256        string `json:"sha256"`
}

// checkAttestation checks one standard attestation (see checkAttestations).
func checkAttestation(t *trust.File, v *Verification, c attestationCheck, predicateType string, bundleBytes []byte, want map[string]string) error {
	env, hint, err := sigbundle.Unwrap(bundleBytes)
	if err != nil {
		return err
	}
	if env.PayloadType != PayloadType {
		return fmt.Errorf("the envelope has payload type %q, want %q", env.PayloadType, PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return fmt.Errorf("the envelope's payload: %v", err)
	}
	k, err := verifyTrusted(t, env, trust.RunRecords, c.at)
	if err != nil {
		return err
	}
	if v.Key != nil && k.ID != v.Key.ID {
		return fmt.Errorf("signed by key %q (%s), the record by %q (%s)", k.Name, k.ID, v.Key.Name, v.Key.ID)
	}
	if hint != k.ID {
		return fmt.Errorf("the bundle names key %q, but key %q (%s) signed it", hint, k.Name, k.ID)
	}
	var st intoto.Statement
	if err := (protojson.UnmarshalOptions{}).Unmarshal(payload, &st); err != nil {
		return fmt.Errorf("the signed payload is not an in-toto statement: %v", err)
	}
	if st.GetType() != intoto.StatementTypeUri || st.GetPredicateType() != predicateType {
		return fmt.Errorf("the signed statement has type %q and predicate type %q, want %q and %q", st.GetType(), st.GetPredicateType(), intoto.StatementTypeUri, predicateType)
	}
	if err := st.Validate(); err != nil {
		return fmt.Errorf("the signed statement is invalid: %v", err)
	}
	if len(st.GetSubject()) > maxSubjects {
		return fmt.Errorf("the signed statement lists %d subjects, at most %d", len(st.GetSubject()), maxSubjects)
	}
	got := map[string]string{}
	for _, s := range st.GetSubject() {
		if _, dup := got[s.GetName()]; dup {
			return fmt.Errorf("the signed statement lists subject %q twice", s.GetName())
		}
		got[s.GetName()] = s.GetDigest()["sha256"]
	}
	if d := subjectDiff(want, got); d != "" {
		return fmt.Errorf("its subjects are not the run's signed outputs: %s", d)
	}
	pred, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return err
	}
	switch predicateType {
	case ProvenancePredicateType:
		var p slsa.Provenance
		if err := protojson.Unmarshal(pred, &p); err != nil {
			return fmt.Errorf("not a SLSA provenance: %v", err)
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("not a valid SLSA provenance: %v", err)
		}
		if bt := p.GetBuildDefinition().GetBuildType(); bt != RunBuildType {
			return fmt.Errorf("build type %q, want %q", bt, RunBuildType)
		}
		if id := p.GetRunDetails().GetMetadata().GetInvocationId(); id != c.record.ID {
			return fmt.Errorf("is the provenance of run %q, not %q", id, c.record.ID)
		}
	case TestResultPredicateType:
		var tr testresult.TestResult
		if err := protojson.Unmarshal(pred, &tr); err != nil {
			return fmt.Errorf("not a test result: %v", err)
		}
		if r := tr.GetResult(); r != TestPassed && r != TestFailed && r != "WARNED" {
			return fmt.Errorf("test result %q is not PASSED, WARNED or FAILED", r)
		}
	}
	return nil
}

// subjectDiff describes how got differs from want ("" when equal).
func subjectDiff(want, got map[string]string) string {
	var diffs []string
	for n, h := range want {
		g, ok := got[n]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s is not a subject", n))
		case g != h:
			diffs = append(diffs, fmt.Sprintf("%s has sha256 %s, the record %s", n, g, h))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s is not an output of the run", n))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 8 {
		diffs = append(diffs[:8], fmt.Sprintf("and %d more", len(diffs)-8))
	}
	return strings.Join(diffs, ", ")
}

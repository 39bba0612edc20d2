package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/sigbundle"
	"github.com/reprolab/repro/internal/testenv"
)

// tarNames lists the regular members of the tar file at p.
func tarNames(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			out = append(out, h.Name)
		}
	}
}

// statementOf decodes the in-toto statement of a Sigstore bundle file.
func statementOf(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := sigbundle.Unwrap(b)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestHumanEvalBundleWithCosign scores the example samples in the sandbox
// with a scanned image, exports the run, and checks the bundle in a fresh
// REPRO_HOME with repro (writing a VSA) and with the maintainer's cosign
// check, offline; the VSA verifies with cosign against the verifier's key.
// Then each member of the bundle, changed by one byte, fails both.
func TestHumanEvalBundleWithCosign(t *testing.T) {
	home, py := scanHome(t)
	newHumanEvalHome(t, home)
	env := []string{"REPRO_HOME=" + home}
	feed := writeFiles(t, t.TempDir(), map[string]string{"TEST-0001.json": osvRecord("TEST-0001", "python3.11", "introduced", "0", "fixed", py)})
	if r := repro(t, env, "image", "scan", "--osv", feed); r.code != 0 {
		t.Fatalf("image scan: %d %s", r.code, r.stderr)
	}
	example := filepath.Join("..", "..", "examples", "humaneval-samples.jsonl")
	r := repro(t, env, "humaneval", "--samples", example, "--tasks", exampleTasks, "--json")
	if r.code != 0 {
		t.Fatalf("humaneval: %d %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	runstest.Verified(t, h.RunDir)

	// The Test Result names every sample: six tasks, passes and failures.
	tr := statementOf(t, filepath.Join(h.RunDir, runs.TestResultFile))["predicate"].(map[string]any)
	passed, _ := tr["passedTests"].([]any)
	failed, _ := tr["failedTests"].([]any)
	if tr["result"] != "FAILED" || len(passed) == 0 || len(failed) == 0 || !slices.Contains(failed, any("HumanEval/32#0")) {
		t.Fatalf("test result %v", tr)
	}
	prov := statementOf(t, filepath.Join(h.RunDir, runs.ProvenanceFile))["predicate"].(map[string]any)
	var deps []string
	for _, d := range prov["buildDefinition"].(map[string]any)["resolvedDependencies"].([]any) {
		deps = append(deps, d.(map[string]any)["name"].(string))
	}
	for _, want := range []string{"catalog/humanevalplus-v0.1.10", "evaluator-image/id", "evaluator-image/manifest", "evaluator-image/sbom", "harness", "samples"} {
		if !slices.Contains(deps, want) {
			t.Errorf("the provenance lacks the dependency %s: %q", want, deps)
		}
	}

	bundle := filepath.Join(t.TempDir(), "run.tar")
	if r := repro(t, env, "runs", "export", h.RunID, "--out", bundle); r.code != 0 {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	names := tarNames(t, bundle)
	for _, want := range []string{"run/" + runs.ProvenanceFile, "run/" + runs.TestResultFile, "image/sbom.cdx.json", "image/scan.dsse.json"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the bundle lacks %s: %q", want, names)
		}
	}
	pub := filepath.Join(t.TempDir(), "lab.pub")
	os.WriteFile(pub, []byte(repro(t, env, "keys", "export").stdout), 0o644)
	trustPath := filepath.Join(t.TempDir(), "lab-trust.json")
	os.WriteFile(trustPath, []byte(repro(t, env, "keys", "export", "--trust-file").stdout), 0o644)

	reviewer := []string{"REPRO_HOME=" + t.TempDir()}
	vsa := filepath.Join(t.TempDir(), "vsa.sigstore.json")
	v := repro(t, reviewer, "runs", "verify", "--bundle", bundle, "--trust", trustPath, "--vsa", vsa)
	if v.code != 0 || !strings.Contains(v.stdout, runs.ProvenanceFile+": "+runs.ProvenancePredicateType) || !strings.Contains(v.stdout, "verification summary") {
		t.Fatalf("repro verify: %d %s %s", v.code, v.stdout, v.stderr)
	}
	if out, err := runstest.CheckBundle(t, bundle, pub); err != nil || !strings.Contains(out, "every check passed") || !strings.Contains(out, "image/scan.dsse.json: a scan of image") {
		t.Fatalf("cosign check: %v\n%s", err, out)
	}
	if p := statementOf(t, vsa)["predicate"].(map[string]any); p["verificationResult"] != "PASSED" {
		t.Fatalf("vsa %v", p)
	}
	verifierPub := filepath.Join(t.TempDir(), "verifier.pub")
	os.WriteFile(verifierPub, []byte(repro(t, reviewer, "keys", "export").stdout), 0o644)
	argv := testenv.Offline(t, testenv.Cosign(t), "verify-blob-attestation", "--key", verifierPub, "--insecure-ignore-tlog",
		"--type", runs.VSAPredicateType, "--bundle", vsa, filepath.Join(h.RunDir, "eval_results.json"))
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil || !strings.Contains(string(out), "Verified OK") {
		t.Fatalf("cosign on the VSA: %v\n%s", err, out)
	}
	argv = testenv.Offline(t, testenv.Cosign(t), "verify-blob-attestation", "--key", pub, "--insecure-ignore-tlog",
		"--type", runs.VSAPredicateType, "--bundle", vsa, filepath.Join(h.RunDir, "eval_results.json"))
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err == nil {
		t.Fatalf("cosign took the VSA with the lab's key, not the verifier's:\n%s", out)
	}

	t.Logf("%d members, each changed by one byte: %q", len(names), names)
	for _, name := range names {
		changed := filepath.Join(t.TempDir(), "changed.tar")
		rewriteTar(t, bundle, changed, func(n string, r io.Reader) []byte {
			if n != name {
				return nil
			}
			b, _ := io.ReadAll(r)
			b[len(b)/2] ^= 1
			return b
		})
		if v := repro(t, reviewer, "runs", "verify", "--bundle", changed, "--trust", trustPath); v.code != 4 {
			t.Errorf("%s changed: repro verify exit %d, want 4: %s", name, v.code, v.stderr)
		}
		if out, err := runstest.CheckBundle(t, changed, pub); err == nil || !strings.Contains(out, "REFUSED") {
			t.Errorf("%s changed: the cosign check passed it: %v\n%s", name, err, out)
		}
	}
}

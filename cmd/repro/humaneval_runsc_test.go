package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestHumanEvalRunscMatchesRunc scores the example samples file (correct,
// wrong and cheating samples) under runc and under runsc: every sample
// gets the same base and plus verdict, and the run record of each names
// its runtime.
func TestHumanEvalRunscMatchesRunc(t *testing.T) {
	home := humanevalHome(t, true)
	example := filepath.Join("..", "..", "examples", "humaneval-samples.jsonl")
	verdicts := map[string]evalResults{}
	for _, rt := range []string{"runc", "runsc"} {
		r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--samples", example, "--tasks", exampleTasks, "--runtime", rt, "--json")
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", rt, r.code, r.stderr)
		}
		h := parseHumanEvalJSON(t, r)
		res := readEvalResults(t, h.ResultsFile)
		if len(res.Eval) != 6 {
			t.Fatalf("%s: %d tasks scored, want 6", rt, len(res.Eval))
		}
		verdicts[rt] = res
		if got := recordRuntime(t, h.RunDir); got != rt {
			t.Errorf("the run record under %s names runtime %q", rt, got)
		}
	}
	runc, runsc := verdicts["runc"], verdicts["runsc"]
	if !reflect.DeepEqual(runc, runsc) {
		t.Errorf("verdicts differ between runc and runsc:\nrunc  %+v\nrunsc %+v", runc, runsc)
	}
	failed := 0
	for _, entries := range runc.Eval {
		for _, e := range entries {
			if e.BaseStatus != "pass" || e.PlusStatus != "pass" {
				failed++
			}
		}
	}
	if failed == 0 {
		t.Error("every example passed: the comparison would not see a difference in failures")
	}
}

// recordRuntime reads the sandbox runtime from the run record in dir.
func recordRuntime(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "record.json"))
	if err != nil {
		t.Fatalf("run record: %v", err)
	}
	var rec struct {
		Sandbox struct {
			Runtime string `json:"runtime"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("run record: %v", err)
	}
	return strings.TrimSpace(rec.Sandbox.Runtime)
}

// TestHumanEvalCanonicalFullRunsc: the 164 canonical solutions pass under
// runsc as under runc, base and plus.
func TestHumanEvalCanonicalFullRunsc(t *testing.T) {
	home := humanevalHome(t, true)
	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--canonical", "--runtime", "runsc")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "pass@1 (base / plus): 100.0 / 100.0") || !strings.Contains(r.stdout, "self-check 164/164 passed") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	t.Logf("%s", r.stdout)
}

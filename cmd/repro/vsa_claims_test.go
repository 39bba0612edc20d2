package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// resign changes the record of run id of home with edit and signs it
// again with home's own key, as a lab can with its own runs.
func resign(t *testing.T, home, id string, edit func(rec *runs.Record)) {
	t.Helper()
	r, err := runs.Open(home, id)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := r.ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	edit(rec)
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
}

// vsaOf verifies run id of home (or a bundle) with --vsa and returns the
// exit code and the VSA's verification result and verified levels.
func vsaOf(t *testing.T, home string, args ...string) (int, string, []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "vsa.sigstore.json")
	r := repro(t, []string{"REPRO_HOME=" + home}, append(append([]string{"runs", "verify"}, args...), "--vsa", out)...)
	p := statementOf(t, out)["predicate"].(map[string]any)
	var levels []string
	for _, l := range p["verifiedLevels"].([]any) {
		levels = append(levels, l.(string))
	}
	return r.code, p["verificationResult"].(string), levels
}

// TestVSAStatesWhatWasChecked: a VSA names the checks it made and says
// PASSED only when they held. An honest run's VSA states its record and
// that its scores are its verdicts', and not that it matches a board's
// reference profile, which it does not; a run re-signed to claim 97.5%
// for results that pass nothing, and a four-task run re-signed to claim
// 164 tasks, fail, as does the latter's bundle checked elsewhere.
func TestVSAStatesWhatWasChecked(t *testing.T) {
	home := t.TempDir()
	env := []string{"REPRO_HOME=" + home}
	samples := []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", FailingInput: `[1]`, Reason: "AssertionError"},
		{Task: "HumanEval/2", Pass: true}, {Task: "HumanEval/3", Pass: true}}
	honest := runstest.HumanEvalRun(t, home, samples, runstest.HumanEvalOptions{Label: "honest", Engine: "repro"})
	code, result, levels := vsaOf(t, home, honest)
	if code != 0 || result != "PASSED" || !slices.Equal(levels, []string{"SLSA_BUILD_LEVEL_1", runs.VSARecordVerified, runs.VSAScoresFromVerdicts}) {
		t.Errorf("honest run: exit %d, %s %q", code, result, levels)
	}
	if r := repro(t, env, "runs", "verify", honest); r.code != 0 || !strings.Contains(r.stdout, "claims: its summary's scores are what its results' verdicts give") ||
		!strings.Contains(r.stdout, "board: not ranked here: ") {
		t.Errorf("runs verify of the honest run: %d %s %s", r.code, r.stdout, r.stderr)
	}

	forged := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", FailingInput: `[0]`, Reason: "AssertionError"}, {Task: "HumanEval/1", FailingInput: `[1]`, Reason: "AssertionError"}},
		runstest.HumanEvalOptions{Label: "forged", Engine: "repro"})
	resign(t, home, forged, func(rec *runs.Record) {
		rec.Summary.(map[string]any)["base_pass_at_k"] = map[string]float64{"pass@1": 0.975}
	})
	if code, result, levels := vsaOf(t, home, forged); code != 4 || result != "FAILED" || !slices.Equal(levels, []string{"FAILED"}) {
		t.Errorf("run re-signed to claim 97.5%%: exit %d, %s %q", code, result, levels)
	}

	subset := runstest.HumanEvalRun(t, home, samples, runstest.HumanEvalOptions{Label: "subset", Engine: "repro"})
	resign(t, home, subset, func(rec *runs.Record) {
		s := rec.Summary.(map[string]any)
		s["tasks"], s["subset"] = 164, false
	})
	if code, result, _ := vsaOf(t, home, subset); code != 4 || result != "FAILED" {
		t.Errorf("four tasks re-signed as 164: exit %d, %s", code, result)
	}
	bundle := filepath.Join(t.TempDir(), "subset.tar")
	if r := repro(t, env, "runs", "export", subset, "--out", bundle); r.code != 0 {
		t.Fatalf("runs export: %d %s", r.code, r.stderr)
	}
	trustPath := filepath.Join(home, "trust.json")
	if code, result, _ := vsaOf(t, t.TempDir(), "--bundle", bundle, "--trust", trustPath); code != 4 || result != "FAILED" {
		t.Errorf("the bundle of four tasks re-signed as 164, checked elsewhere: exit %d, %s", code, result)
	}
}

package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// TestVerifyRunUsage: what cannot be checked is refused before anything
// is read, with no result.
func TestVerifyRunUsage(t *testing.T) {
	home := t.TempDir()
	id := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{})
	dir := t.TempDir()
	for name, req := range map[string]VerifyRequest{
		"neither":           {},
		"both":              {IDs: []string{id}, Bundle: filepath.Join(dir, "b.tar")},
		"extract, no tar":   {IDs: []string{id}, Extract: dir},
		"bundle is folder":  {Bundle: dir},
		"vsa folder absent": {IDs: []string{id}, VSA: filepath.Join(dir, "no", "v.json")},
		"unknown run":       {IDs: []string{"nope"}},
	} {
		if v, err := VerifyRun(context.Background(), home, req); v != nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: %v, %v", name, v, err)
		}
	}
	if v, err := VerifyRun(context.Background(), home, VerifyRequest{IDs: []string{id}, Trust: filepath.Join(dir, "none.json")}); v != nil || exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("no trust file: %v, %v", v, err)
	}
}

// TestVerifyRun: a run that verifies has its scores and board checked and
// its VSA written; a run and a bundle whose files changed are reported
// with the verification's integrity error.
func TestVerifyRun(t *testing.T) {
	home := t.TempDir()
	id := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{})
	vsa := filepath.Join(t.TempDir(), "vsa.json")
	v, err := VerifyRun(context.Background(), home, VerifyRequest{IDs: []string{id[:12]}, VSA: vsa, Version: "test"})
	if err != nil || v == nil || v.Name != id || v.Claims == "" || len(v.Checks) != 2 || v.Checks[0].Property != runs.VSAScoresFromVerdicts || v.NotRanked == nil {
		t.Fatalf("verified: %+v, %v", v, err)
	}
	if b, err := os.ReadFile(vsa); err != nil || !strings.Contains(string(b), "payloadType") {
		t.Fatalf("VSA: %v %s", err, b)
	}
	bundle := filepath.Join(t.TempDir(), "b.tar")
	if _, err := runs.Export(home, id, bundle); err != nil {
		t.Fatal(err)
	}
	ex := filepath.Join(t.TempDir(), "ex")
	if v, err = VerifyRun(context.Background(), home, VerifyRequest{Bundle: bundle, Extract: ex}); err != nil || v.Name != bundle || v.Claims == "" || v.NotRanked != nil {
		t.Fatalf("bundle: %+v, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(ex, "run", runs.RecordFile)); err != nil {
		t.Fatalf("not extracted: %v", err)
	}
	os.WriteFile(filepath.Join(home, "runs", id, "eval_results.json"), []byte("{}"), 0o644)
	v, err = VerifyRun(context.Background(), home, VerifyRequest{IDs: []string{id}})
	if exitcode.Of(err) != exitcode.Integrity || v == nil || len(v.Problems) == 0 || v.Claims != "" {
		t.Fatalf("tampered run: %+v, %v", v, err)
	}
}

// Package reproducetest writes reproduction runs for tests of the code
// that reads them (boards), without a sandbox.
package reproducetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/reproduce"
	"github.com/reprolab/repro/internal/runs"
)

// Record writes a signed run of kind reproduce.Kind under home through the
// runs API, signed with home's run key, as `repro runs reproduce` leaves
// one: reproduction.json with sub and c, and a record whose extra section
// names the reproduction; its exit code is 0 when c agrees, else 1. It
// returns the run's id.
func Record(t testing.TB, home string, sub reproduce.Submission, c reproduce.Comparison) string {
	t.Helper()
	r, err := runs.Create(home, reproduce.Kind)
	if err != nil {
		t.Fatal(err)
	}
	if c.Agreements == nil {
		c.Agreements = []reproduce.Agreed{}
	}
	if c.Differences == nil {
		c.Differences = []reproduce.Verdict{}
	}
	res := reproduce.Result{Schema: reproduce.Schema, RunID: r.ID, Submission: sub, Agrees: c.Agrees(), Comparison: c}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, reproduce.OutputFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("v0.0.0-test")
	rec.Extra = map[string]any{"dataset": sub.Dataset, "reproduction": map[string]any{"submission": sub, "verdicts": c.Verdicts, "agree": c.Agree,
		"differences": len(c.Differences), "agrees": res.Agrees}}
	code := 0
	if !res.Agrees {
		code = 1
	}
	if err := r.Finish(rec, code); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// Agreeing is a comparison of n base verdicts of task HumanEval/0 that
// all agree.
func Agreeing(n int) reproduce.Comparison {
	c := reproduce.Comparison{Verdicts: n, Agree: n}
	for i := range n {
		c.Agreements = append(c.Agreements, reproduce.Agreed{Task: "HumanEval/0", Sample: i, Phase: "base", Status: "pass"})
	}
	return c
}

package reproduce_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/reproduce"
	"github.com/reprolab/repro/internal/reproduce/reproducetest"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// TestLatest: the newest reproduction of a run that verifies against
// the local run key and names that run's record; edited reproductions,
// reproductions of another record of the same id and reproductions
// signed by another key are passed over.
func TestLatest(t *testing.T) {
	home := t.TempDir()
	id := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", Pass: true}}, runstest.HumanEvalOptions{Label: "lab-model"})
	if r, err := reproduce.Latest(home, id); err != nil || r != nil {
		t.Fatalf("no reproduction yet: %+v %v", r, err)
	}
	rec, err := os.ReadFile(runs.RecordPath(home, id))
	if err != nil {
		t.Fatal(err)
	}
	sub := reproduce.Submission{RunID: id, RecordSHA256: digest.Of(rec).Hex(), Dataset: "HumanEvalPlus-v0.1.10"}

	agreed := reproducetest.Record(t, home, sub, reproducetest.Agreeing(2))
	r, err := reproduce.Latest(home, id)
	if err != nil || r == nil || r.RunID != agreed || !r.Agrees || r.Text() != "re-executed: 2 of 2 verdicts agree" {
		t.Fatalf("an agreeing reproduction: %+v %v", r, err)
	}

	differs := reproduce.Comparison{Verdicts: 2, Agree: 1,
		Agreements:  []reproduce.Agreed{{Task: "HumanEval/0", Phase: "base", Status: "pass"}},
		Differences: []reproduce.Verdict{{Task: "HumanEval/1", Phase: "base", Submitted: reproduce.Measurement{Status: "pass"}, Reexecuted: reproduce.Measurement{Status: "fail"}}}}
	newer := reproducetest.Record(t, home, sub, differs)
	r, _ = reproduce.Latest(home, id)
	if r == nil || r.RunID != newer || r.Agrees || r.Text() != "re-executed: 1 of 2 verdicts agree; differs: HumanEval/1 #0 base: submitted pass, re-executed fail" {
		t.Fatalf("the newer, differing reproduction: %+v", r)
	}

	// Edited after signing to claim agreement: passed over.
	edited := reproducetest.Record(t, home, sub, differs)
	p := filepath.Join(home, "runs", edited, reproduce.OutputFile)
	b, _ := os.ReadFile(p)
	b = []byte(strings.Replace(strings.Replace(string(b), `"agree": 1`, `"agree": 2`, 1), `"differences": [`, `"differences": [], "x": [`, 1))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A reproduction of another record with this id: passed over.
	other := sub
	other.RecordSHA256 = strings.Repeat("0", 64)
	reproducetest.Record(t, home, other, reproducetest.Agreeing(2))
	// Signed with another machine's key and copied in: passed over.
	elsewhere := t.TempDir()
	foreign := reproducetest.Record(t, elsewhere, sub, reproducetest.Agreeing(2))
	if err := os.CopyFS(filepath.Join(home, "runs", foreign), os.DirFS(filepath.Join(elsewhere, "runs", foreign))); err != nil {
		t.Fatal(err)
	}
	if r, _ := reproduce.Latest(home, id); r == nil || r.RunID != newer {
		t.Fatalf("Latest took an edited, a mismatched or a foreign reproduction: %+v", r)
	}
	// Given the record's digest (the board has just verified the record),
	// LatestOf finds the same without reading it, and the reproduction of
	// the other record for that record's digest.
	if r, _ := reproduce.LatestOf(home, id, sub.RecordSHA256); r == nil || r.RunID != newer {
		t.Fatalf("LatestOf the record read: %+v", r)
	}
	if r, _ := reproduce.LatestOf(home, id, other.RecordSHA256); r == nil || r.RunID == newer || !r.Agrees {
		t.Fatalf("LatestOf another record of the id: %+v", r)
	}

	if r, err := reproduce.Latest(home, "humaneval-20260101T000000Z-00000000"); err != nil || r != nil {
		t.Errorf("a run with no reproduction: %+v %v", r, err)
	}
	if r, err := reproduce.Latest(home, "../x"); err != nil || r != nil {
		t.Errorf("not a run id: %+v %v", r, err)
	}
}

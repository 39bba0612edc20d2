package codebench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/journal"
	"github.com/reprolab/repro/internal/runs"
)

// TestResumeRefusesALiveRun: a run whose journal is still held by its
// writer (a repro process that is running) is not resumed, by id or as
// the latest unfinished run; once the writer is gone it is.
func TestResumeRefusesALiveRun(t *testing.T) {
	home := t.TempDir()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	w, err := journal.Create(filepath.Join(r.Dir, JournalFile), journalHeader{Type: "header", RunID: r.ID, TaskSpec: "0-1", DatasetChoice: "humanevalplus"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = openPrior(home, &Options{Resume: r.ID})
	if exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "still running") {
		t.Errorf("resume of a live run: %v, want exit %d naming it as running", err, exitcode.Precondition)
	}
	if p, err := openPrior(home, &Options{ResumeLatest: true, Samples: "s.jsonl", Tasks: "0-1", Dataset: "humanevalplus"}); err != nil || p != nil {
		t.Errorf("the latest unfinished run while it runs: %v, %v; want none", p, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if p, err := openPrior(home, &Options{Resume: r.ID}); err != nil || p == nil || p.id != r.ID {
		t.Errorf("resume after the writer closed: %v, %v", p, err)
	}
}

// TestReuseOnlyUnderTheSameGroundTruth: a verdict is taken from a resumed
// run's journal, or from the cache, only where it was judged against the
// ground truth that this run judges its task by. Where a task's ground
// truth was computed again in between (other per-input times, hence other
// limits), its verdicts are decided again, and counted; a verdict
// journaled without a digest (before it was recorded) serves nothing.
// Every verdict this run journals names the digest it was judged by.
func TestReuseOnlyUnderTheSameGroundTruth(t *testing.T) {
	key := TruthKey{Dataset: "d", Image: "i", CPU: "c"}
	tk := func(n int) *task.Task {
		return &task.Task{ID: fmt.Sprintf("HumanEval/%d", n), Index: n, Base: []json.RawMessage{[]byte("[1]")}}
	}
	d := &task.Dataset{Tasks: []*task.Task{tk(0), tk(1)}}
	record := func(tr *Truth, k *task.Task, secs float64) string {
		t.Helper()
		if _, err := tr.keep(context.Background(), k, &taskTruth{Task: k.ID, Base: phaseOf(1, secs)}, false); err != nil {
			t.Fatal(err)
		}
		sum, err := tr.TaskDigest(k)
		if err != nil {
			t.Fatal(err)
		}
		return sum.Hex()
	}
	// The run resumed judged both tasks by before's ground truth; this
	// run's has task 0's the same and task 1's computed again.
	before, err := OpenTruth(t.TempDir(), key)
	if err != nil {
		t.Fatal(err)
	}
	now, err := OpenTruth(t.TempDir(), key)
	if err != nil {
		t.Fatal(err)
	}
	old0, old1 := record(before, d.Tasks[0], 0.010), record(before, d.Tasks[1], 0.010)
	new0, new1 := record(now, d.Tasks[0], 0.010), record(now, d.Tasks[1], 0.012)
	if old0 != new0 || old1 == new1 {
		t.Fatalf("digests %s %s, %s %s: want task 0's equal and task 1's not", old0, new0, old1, new1)
	}
	smp := func(n, id int) *task.Sample {
		return &task.Sample{TaskID: d.Tasks[n].ID, ID: id, Solution: fmt.Sprintf("def f():\n    return %d\n", id)}
	}
	samples := []*task.Sample{smp(0, 0), smp(1, 1), smp(0, 2), smp(1, 3), smp(1, 4), smp(0, 5), smp(1, 6)}
	pass := PhaseResult{Status: StatusPass, FailInput: -1}
	fail := PhaseResult{Status: StatusFail, FailInput: 0}
	p := &priorRun{id: "20260101-000000-abcd", verdicts: []journalVerdict{
		newVerdict(0, samples[0], task.Base, pass, old0),
		newVerdict(1, samples[1], task.Base, pass, old1),
		newVerdict(2, samples[2], task.Base, pass, ""), // journaled before digests were
		// Sample 5 was decided again after an earlier resume: the later
		// verdict is the one a resume takes.
		newVerdict(5, samples[5], task.Base, pass, old1),
		newVerdict(5, samples[5], task.Base, fail, new0),
		// Judged by the old ground truth, but the cache holds the
		// program's verdict under this run's: reused from there, not
		// decided again.
		newVerdict(6, samples[6], task.Base, pass, old1),
	}}
	jr := &journalRun{truth: truthDigests(d, now)}
	if jr.prior, err = p.known(samples); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), JournalFile)
	if jr.w, err = journal.Create(path, journalHeader{Type: "header"}); err != nil {
		t.Fatal(err)
	}
	// The cache holds verdicts of task 1's programs: sample 3's judged by
	// the old ground truth, sample 4's by this run's.
	jr.cache = map[cacheKey]cached{
		{d.Tasks[1].ID, programDigest(samples[3]), "base", old1}: {res: pass, from: "run-old"},
		{d.Tasks[1].ID, programDigest(samples[4]), "base", new1}: {res: fail, from: "run-new"},
		{d.Tasks[1].ID, programDigest(samples[6]), "base", new1}: {res: fail, from: "run-new"},
	}
	for i, want := range []struct {
		reused bool
		res    PhaseResult
	}{{true, pass}, {false, PhaseResult{}}, {false, PhaseResult{}}, {false, PhaseResult{}}, {true, fail}, {true, fail}, {true, fail}} {
		res, ok := jr.known(i, samples[i], task.Base)
		if ok != want.reused || ok && res.Status != want.res.Status {
			t.Errorf("sample %d: reused %v (%s), want %v (%s)", i, ok, res.Status, want.reused, want.res.Status)
		}
	}
	if r := jr.report; r.Resumed != 2 || r.Rescored != 2 || r.Cached != 2 {
		t.Errorf("resumed %d, rescored %d, cached %d: want 2, 2 and 2", r.Resumed, r.Rescored, r.Cached)
	}
	for _, i := range []int{1, 2, 3} {
		if err := jr.decided(i, samples[i], task.Base, pass, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := jr.close(); err != nil {
		t.Fatal(err)
	}
	var got []journalVerdict
	if _, err := journal.ScanFile(path, func(e journal.Entry) error {
		var v journalVerdict
		if json.Unmarshal(e.Body, &v) == nil && v.Type == "verdict" {
			got = append(got, v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{4: new1, 6: new1, 1: new1, 2: new0, 3: new1}
	if len(got) != len(want) {
		t.Fatalf("journaled %d verdicts, want %d", len(got), len(want))
	}
	for _, v := range got {
		if v.Truth != want[v.Sample] {
			t.Errorf("sample %d journaled with ground truth %q, want %q", v.Sample, v.Truth, want[v.Sample])
		}
	}
}

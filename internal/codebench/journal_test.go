package codebench

import (
	"path/filepath"
	"strings"
	"testing"

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

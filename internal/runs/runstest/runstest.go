// Package runstest holds test helpers for run folders.
package runstest

import (
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/runs"
)

// Verified opens the run in folder dir (REPRO_HOME/runs/<id>), checks it
// against its signed record, and returns the record; any failure fails t.
func Verified(t testing.TB, dir string) *runs.Record {
	t.Helper()
	run, err := runs.Open(filepath.Dir(filepath.Dir(dir)), filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	rec, problems, err := run.Verify()
	if err != nil {
		t.Fatalf("run %s does not match its signed record: %v %v", run.ID, err, problems)
	}
	return rec
}

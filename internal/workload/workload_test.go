package workload

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/store"

	_ "modernc.org/sqlite"
)

// TestDoSignsWhateverTheOutcome: the record is signed with the exit code
// of the body's outcome and covers the files the body wrote.
func TestDoSignsWhateverTheOutcome(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		err  error
		code exitcode.Code
	}{
		{nil, exitcode.OK},
		{exitcode.Errorf(exitcode.Integrity, "samples changed"), exitcode.Integrity},
		{errors.New("plain failure"), exitcode.Negative},
	} {
		var dir string
		err := Do(home, "test", "v1", func(r *Run) error {
			dir = r.Dir
			r.AddAsset(runs.Asset{ID: "x", SHA256: "00"})
			if err := r.WriteJSON("out.json", map[string]int{"n": 1}, 0o600); err != nil {
				t.Fatal(err)
			}
			return tc.err
		})
		if err != tc.err {
			t.Errorf("Do returned %v, want the body's %v", err, tc.err)
		}
		rec := runstest.Verified(t, dir)
		if rec.ExitCode != int(tc.code) || len(rec.Assets) != 1 || len(rec.Files) != 3 || rec.Files[0].Path != "out.json" ||
			rec.Files[1].Path != runs.ProvenanceFile || rec.Files[2].Path != runs.TestResultFile {
			t.Errorf("record: exit %d, assets %v, files %v; want exit %d, one asset, out.json and the two attestations", rec.ExitCode, rec.Assets, rec.Files, tc.code)
		}
	}
}

// TestDoWithoutARunFolderRunsNothing: when the run folder cannot be made,
// the body never runs.
func TestDoWithoutARunFolderRunsNothing(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if err := os.WriteFile(home, nil, 0o600); err != nil { // a file where the folder goes
		t.Fatal(err)
	}
	ran := false
	err := Do(home, "test", "v1", func(*Run) error { ran = true; return nil })
	if err == nil || ran {
		t.Fatalf("err %v, body ran %v; want an error and no run", err, ran)
	}
}

func TestOpenAssetFailsClosed(t *testing.T) {
	st, err := store.Open(t.TempDir(), catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]exitcode.Code{
		"edm-cifar10-32x32-cond-vp": exitcode.Precondition, // unpinned
		"humaneval":                 exitcode.Precondition, // pinned, not stored
		"no-such-asset":             exitcode.Usage,
	} {
		a, err := OpenAsset(context.Background(), st, id)
		if err == nil {
			a.Close()
		}
		if got := exitcode.Of(err); got != want {
			t.Errorf("OpenAsset(%q): %v (exit %d), want exit %d", id, err, got, want)
		}
	}
}

// indexedStatus reads the run index's entry of id straight from the
// database, without the reconciliation a list does.
func indexedStatus(t *testing.T, home, id string) (string, error) {
	t.Helper()
	db, err := sql.Open("sqlite", layout.Home(home).RunIndex()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var status string
	err = db.QueryRow("SELECT status FROM runs WHERE id = ?", id).Scan(&status)
	return status, err
}

// TestEndIndexesTheRun: a run that ends is in the run index at once.
func TestEndIndexesTheRun(t *testing.T) {
	home := t.TempDir()
	var id string
	for _, want := range []string{"ok", "integrity"} {
		err := Do(home, "test", "v1", func(r *Run) error {
			id = r.ID
			if want == "integrity" {
				return exitcode.Errorf(exitcode.Integrity, "samples changed")
			}
			return nil
		})
		if exitcode.Of(err).String() != want {
			t.Fatalf("Do: %v", err)
		}
		if status, err := indexedStatus(t, home, id); err != nil || status != want {
			t.Errorf("indexed status of %s: %q, %v; want %q", id, status, err, want)
		}
	}
}

// TestIndexFailureNeverFailsARun: with the index unusable (a corrupt
// database, or a file where its folder goes) a run still ends, is signed
// and verifies, and the broken database is left for a list to rebuild.
func TestIndexFailureNeverFailsARun(t *testing.T) {
	for name, breakIt := range map[string]func(home string){
		"corrupt database": func(home string) {
			os.MkdirAll(layout.Home(home).Index(), 0o700)
			os.WriteFile(layout.Home(home).RunIndex(), []byte("not a database, long enough to look like a header"), 0o600)
		},
		"no folder for it": func(home string) {
			os.MkdirAll(home, 0o700)
			os.WriteFile(layout.Home(home).Index(), nil, 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			breakIt(home)
			var dir string
			if err := Do(home, "test", "v1", func(r *Run) error { dir = r.Dir; return nil }); err != nil {
				t.Fatalf("Do: %v", err)
			}
			runstest.Verified(t, dir)
		})
	}
}

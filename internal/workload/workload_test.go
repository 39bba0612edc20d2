package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/store"
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
		if rec.ExitCode != int(tc.code) || len(rec.Assets) != 1 || len(rec.Files) != 1 || rec.Files[0].Path != "out.json" {
			t.Errorf("record: exit %d, assets %v, files %v; want exit %d, one asset, out.json", rec.ExitCode, rec.Assets, rec.Files, tc.code)
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

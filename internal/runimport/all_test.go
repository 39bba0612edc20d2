package runimport

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/trust"
)

// writeTrust writes tf as a trust file and returns its path.
func writeTrust(t *testing.T, tf *trust.File) string {
	t.Helper()
	b, err := json.Marshal(tf)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "trust.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportAllChecksFirst: a path that is not a regular file is a usage
// error and a missing trust file a precondition error, before any bundle
// is imported.
func TestImportAllChecksFirst(t *testing.T) {
	bundle, tf, _ := submission(t)
	home := t.TempDir()
	called := false
	done := func(Outcome, error) { called = true }
	out, err := ImportAll(context.Background(), home, []string{bundle, t.TempDir()}, writeTrust(t, tf), done)
	if exitcode.Of(err) != exitcode.Usage || out != nil || called {
		t.Fatalf("a folder as bundle: %v %v %v", err, out, called)
	}
	out, err = ImportAll(context.Background(), home, []string{bundle}, "", done)
	if exitcode.Of(err) != exitcode.Precondition || out != nil || called {
		t.Fatalf("no trust file: %v %v %v", err, out, called)
	}
	if ids, _ := runs.List(home); len(ids) != 0 {
		t.Fatalf("runs imported before the checks passed: %v", ids)
	}
}

// TestImportAllGoesOn: a bundle that fails does not stop the next; the
// error counts the bundles not imported and has the highest code.
func TestImportAllGoesOn(t *testing.T) {
	bundle, tf, id := submission(t)
	bad := filepath.Join(t.TempDir(), "bad.tar")
	os.WriteFile(bad, []byte("not a tar"), 0o644)
	home := t.TempDir()
	var seen []string
	out, err := ImportAll(context.Background(), home, []string{bad, bundle}, writeTrust(t, tf), func(o Outcome, err error) {
		if (err == nil) != (o.Error == "") {
			t.Errorf("outcome %+v with error %v", o, err)
		}
		seen = append(seen, o.Bundle)
	})
	if err == nil || exitcode.Of(err) == exitcode.OK || !strings.Contains(err.Error(), "1 of 2 bundles not imported") {
		t.Fatalf("error: %v", err)
	}
	if len(out) != 2 || out[0].Error == "" || out[1].Result == nil || out[1].RunID != id || strings.Join(seen, ",") != bad+","+bundle {
		t.Fatalf("outcomes %+v, told of %v", out, seen)
	}
	if ids, _ := runs.List(home); len(ids) != 1 || ids[0] != id {
		t.Fatalf("runs: %v", ids)
	}
	// One bundle: its own error, as it is.
	if _, err := ImportAll(context.Background(), home, []string{bad}, writeTrust(t, tf), nil); err == nil || strings.Contains(err.Error(), "bundles not imported") {
		t.Fatalf("one bad bundle: %v", err)
	}
	// Interrupted: nothing more is read.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err = ImportAll(ctx, t.TempDir(), []string{bundle}, writeTrust(t, tf), nil)
	if err == nil || len(out) != 1 || out[0].Error == "" {
		t.Fatalf("interrupted: %v %+v", err, out)
	}
}

package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// TestReproduceBundleChecksFirst: an unreadable bundle path and a
// --parallel out of range are usage errors, checked in that order before
// the store is opened; a missing trust file stops it before anything runs.
func TestReproduceBundleChecksFirst(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	dir := t.TempDir()
	file := filepath.Join(dir, "b.tar")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Bundle: filepath.Join(dir, "missing.tar"), Parallel: 0}, "cannot read bundle"},
		{Options{Bundle: dir, Parallel: 1}, "cannot read bundle"},
		{Options{Bundle: file, Parallel: 0}, "--parallel 0"},
		{Options{Bundle: file, Parallel: 65}, "--parallel 65"},
	} {
		rep, err := ReproduceBundle(context.Background(), home, "", c.o)
		if rep != nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error with %q", c.o, err, c.want)
		}
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the store was opened: %v", err)
	}
	rep, err := ReproduceBundle(context.Background(), home, "", Options{Bundle: file, Parallel: 1})
	if rep != nil || exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "no trust file") {
		t.Errorf("no trust file: %v", err)
	}
}

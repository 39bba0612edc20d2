package main

import (
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// TestNoHomeStopsOnlyCommandsThatUseOne: where no REPRO_HOME can be found,
// a command that uses one stops before it runs (exit 3, naming
// REPRO_HOME), and one that uses none still runs.
func TestNoHomeStopsOnlyCommandsThatUseOne(t *testing.T) {
	t.Setenv("REPRO_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "")
	code, _, stderr := runRepro(t, "runs", "list", "--json")
	if code != exitcode.Precondition || !strings.Contains(stderr, "REPRO_HOME") {
		t.Errorf("runs list without a home: exit %d, stderr %q; want exit 3 naming REPRO_HOME", code, stderr)
	}
	for _, args := range [][]string{{"version"}, {"catalog", "list"}} {
		if code, _, stderr := runRepro(t, args...); code != exitcode.OK {
			t.Errorf("repro %q without a home: exit %d, stderr %q", args, code, stderr)
		}
	}
}

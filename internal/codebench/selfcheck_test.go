package codebench

import (
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
)

// TestSplitSelfCheck: the tasks named for a self-check on base inputs only
// are taken out of the full self-check, in task order, where the run has
// plus inputs; without plus inputs every task is checked in full (the base
// inputs are all there is). A name that is not a scored task, or twice, is
// a usage error, so that a check can never be narrowed by a typo.
func TestSplitSelfCheck(t *testing.T) {
	tasks := []*task.Task{{ID: "T/0"}, {ID: "T/1"}, {ID: "T/2"}}
	ids := func(ts []*task.Task) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		base       []string
		plus       bool
		full, only string
	}{
		{nil, true, "T/0,T/1,T/2", ""},
		{[]string{"T/2", "T/0"}, true, "T/1", "T/0,T/2"},
		{[]string{"T/0", "T/1", "T/2"}, true, "", "T/0,T/1,T/2"},
		{[]string{"T/1"}, false, "T/0,T/1,T/2", ""},
	} {
		full, only, err := splitSelfCheck(tasks, c.base, c.plus)
		if err != nil || ids(full) != c.full || ids(only) != c.only {
			t.Errorf("%v (plus %v): full %q, base only %q, %v; want %q, %q", c.base, c.plus, ids(full), ids(only), err, c.full, c.only)
		}
	}
	for _, base := range [][]string{{"T/9"}, {"T/1", "T/1"}} {
		if _, _, err := splitSelfCheck(tasks, base, true); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", base, err)
		}
	}
}

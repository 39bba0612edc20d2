package codebench

import (
	"github.com/reprolab/repro/internal/codebench/task"

	"errors"
	"testing"
)

// TestVerdictTally: a sample counts once all its phases have a verdict,
// resumed (Known) or decided; it passed only if every phase passed; the
// wrapped hooks still do what they wrapped, errors included.
func TestVerdictTally(t *testing.T) {
	var got [][3]int
	tally := newVerdictTally(3, 2, func(p, f, n int) { got = append(got, [3]int{p, f, n}) })
	stop := errors.New("journal full")
	known, decided := tally.wrap(
		func(i int, _ *task.Sample, p task.Phase) (PhaseResult, bool) {
			return PhaseResult{Status: StatusPass}, i == 0 // sample 0 resumed: both phases
		},
		func(i int, _ *task.Sample, p task.Phase, pr PhaseResult, shared bool) error {
			if i == 2 && p == task.Plus {
				return stop
			}
			return nil
		})
	for _, p := range []task.Phase{task.Base, task.Plus} {
		if _, ok := known(0, nil, p); !ok {
			t.Fatal("the wrapped Known lost its verdict")
		}
		if _, ok := known(1, nil, p); ok {
			t.Fatal("the wrapped Known made up a verdict")
		}
	}
	pass, fail := PhaseResult{Status: StatusPass}, PhaseResult{Status: StatusFail}
	decided(1, nil, task.Base, fail, false)
	if len(got) != 1 {
		t.Fatalf("a sample with one of two verdicts was counted: %v", got)
	}
	decided(1, nil, task.Plus, pass, true)
	decided(1, nil, task.Plus, pass, true) // a repeat is not counted twice
	decided(2, nil, task.Base, pass, false)
	if err := decided(2, nil, task.Plus, pass, false); !errors.Is(err, stop) {
		t.Fatalf("the wrapped Decided's error was lost: %v", err)
	}
	decided(7, nil, task.Base, pass, false) // out of range: ignored
	want := [][3]int{{1, 0, 3}, {1, 1, 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("reports %v, want %v", got, want)
	}
	// Nil hooks wrapped: nothing known, every decision counted.
	got = nil
	tally = newVerdictTally(1, 1, func(p, f, n int) { got = append(got, [3]int{p, f, n}) })
	known, decided = tally.wrap(nil, nil)
	if _, ok := known(0, nil, task.Base); ok {
		t.Fatal("a nil Known wrapped knows a verdict")
	}
	if err := decided(0, nil, task.Base, pass, false); err != nil || len(got) != 1 || got[0] != [3]int{1, 0, 1} {
		t.Fatalf("decided: %v, reports %v", err, got)
	}
}

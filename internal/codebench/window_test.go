package codebench

import (
	"github.com/reprolab/repro/internal/codebench/task"

	"context"
	"testing"
)

// TestWindowLeftOpenRunsExactly: two inputs of one window that take 0.6 s
// of CPU time each are each within their 1 s limit, but the second's result
// comes 1.2 s after the window's release. The supervisor cannot tell that
// apart from a program that held a result back, so the job ends inexact and
// a run that releases one input at a time decides: a pass, as EvalPlus's
// per-input alarm gives it. Without the windows' check the first run would
// pass the sample by itself, and Exact would not be set.
func TestWindowLeftOpenRunsExactly(t *testing.T) {
	launch, _, img := testSandbox(t)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	tk := d.Task(integrityTask)
	for _, p := range []task.Phase{task.Base, task.Plus} {
		if n := len(tk.Inputs(p)); n < 3 {
			t.Fatalf("%s has %d %s inputs; the test needs 3", tk.ID, n, p)
		}
	}
	// Input 0's window is itself alone; the next holds inputs 1 and 2 (its
	// size follows input 0's few milliseconds), which spin.
	code := tk.Program() + `
import time
def spin(s):
    t = time.process_time()
    while time.process_time() - t < s:
        pass
_fib = fib
calls = 0
def fib(n):
    global calls
    calls += 1
    if calls in (2, 3):
        spin(0.6)
    return _fib(n)
`
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 1
	rep, err := RunStages(context.Background(), StagesConfig{
		Dataset: d, Tasks: []*task.Task{tk}, Launch: launch, Truth: testTruth(t, d, img), Limits: limits, Parallel: 1,
		Samples: []*task.Sample{{TaskID: tk.ID, Solution: code, Origin: "two slow inputs in one window"}},
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rep.Results[0]
	for _, pr := range []*PhaseResult{&r.Base, r.Plus} {
		t.Logf("%s (%s), exact run %v, near limit %v", pr.Status, pr.Reason, pr.Exact, pr.Near)
		if pr.Status != StatusPass || !pr.Exact {
			t.Errorf("status %s (%s), exact run %v: want a pass decided by an exact run", pr.Status, pr.Reason, pr.Exact)
		}
	}
	if rep.Scoring.ExactRuns != 2 {
		t.Errorf("scoring counted %d exact runs, want 2", rep.Scoring.ExactRuns)
	}
}

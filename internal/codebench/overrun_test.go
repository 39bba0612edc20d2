package codebench

import (
	"context"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// The overrun cases: each spins on input 1 of integrityTask's base list
// (limit 1 CPU s here, overrun 1.25 s), forever or for 1.1 CPU s; the last
// then ends its own process, as a program may do at any time in its
// overrun.
var overrunCases = []struct {
	origin string
	after  string // what input 1 does after its spin
	spin   string // the spin's condition
	// running: the call is still running at the end of its overrun, so its
	// timeout is not rechecked.
	running bool
}{
	{origin: "spins forever", spin: "True", running: true},
	{origin: "finishes within its overrun", spin: "time.process_time() - t < 1.1"},
	{origin: "exits within its overrun", spin: "time.process_time() - t < 1.1", after: "os._exit(3)"},
}

func overrunSamples(tk *task.Task) []*task.Sample {
	var out []*task.Sample
	for i, c := range overrunCases {
		code := tk.Program() + `
import os, time
_fib, _calls = fib, 0
def fib(n):
    global _calls
    _calls += 1
    if _calls == 2:
        t = time.process_time()
        while ` + c.spin + `:
            pass
        ` + c.after + `
    return _fib(n)
`
		out = append(out, &task.Sample{TaskID: tk.ID, ID: i, Solution: code, Origin: c.origin})
	}
	return out
}

// TestOverrunKeepsTheVerdict: an input's call that strikes its limit is
// the job's timeout there, whatever it does in its overrun. Under each
// runtime the cases' verdicts (status, reason, failing input) are those
// of the same run without overruns; the call that still runs at 1.25
// times its limit is run once, with its clocks saying so, and the others
// are time-sensitive and run twice, as every timeout is without overruns.
// Under runsc the host's reading of the container may fall below gVisor's
// job clock, which counts a loaded host's waits: then the call that still
// ran is rechecked too, and its clocks show why.
func TestOverrunKeepsTheVerdict(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		launch, _, img := testSandboxOn(t, e)
		d := testDataset(t, "humanevalplus-mini-v0.1.10")
		tk := d.Task(integrityTask)
		truth := testTruth(t, d, img)
		limits := DefaultRunLimits()
		limits.MinTimeLimit, limits.ImportAllowance = 1, 3
		run := func(on bool) *StagesReport {
			defer func(was bool) { overrunOn = was }(overrunOn)
			overrunOn = on
			rep, err := RunStages(context.Background(), StagesConfig{
				Dataset: d, Tasks: []*task.Task{tk}, Samples: overrunSamples(tk), Launch: launch, Truth: truth,
				Limits: limits, Parallel: 1, BaseOnly: true,
			})
			if err != nil {
				t.Fatalf("run (overrun %v): %v", on, err)
			}
			return rep
		}
		with, without := run(true), run(false)
		decided := 0
		for i, c := range overrunCases {
			a, b := with.Results[i].Base, without.Results[i].Base
			t.Logf("%s: %s (%s), clocks %+v, near %v", c.origin, a.Status, a.Reason, a.Clocks, a.Near)
			if a.Status != StatusFail || a.FailInput != 1 || !strings.HasPrefix(a.Reason, "input 1 used more than") {
				t.Errorf("%s: %s at input %d (%s), want a fail at input 1's limit", c.origin, a.Status, a.FailInput, a.Reason)
			}
			if a.Status != b.Status || a.Reason != b.Reason || a.FailInput != b.FailInput {
				t.Errorf("%s: %s at input %d (%s) with its overrun, %s at input %d (%s) without", c.origin,
					a.Status, a.FailInput, a.Reason, b.Status, b.FailInput, b.Reason)
			}
			if b.Near == nil || b.Near.Recheck == nil || b.Clocks.OverrunCPU != 0 {
				t.Errorf("%s without overruns: near %v, clocks %+v, want a recheck and no overrun", c.origin, b.Near, b.Clocks)
			}
			switch {
			case c.running:
				if a.Clocks == nil || !a.Clocks.OverrunRunning || a.Clocks.OverrunCPU <= 1.25 || a.Clocks.OverrunJobCPU < a.Clocks.OverrunCPU || a.Clocks.Run != RunFirst {
					t.Errorf("%s: clocks %+v, want the first run's, still running past 1.25 CPU s", c.origin, a.Clocks)
					break
				}
				switch {
				case a.Clocks.OverrunDecided():
					decided++
					if a.Near != nil {
						t.Errorf("%s: near %v, want one run: its clocks decide", c.origin, a.Near)
					}
				case e.Runtime() != sandbox.Runsc:
					t.Errorf("%s: clocks %+v: under %s the host's reading must cover the job clock", c.origin, a.Clocks, e.Runtime())
				case a.Near == nil || a.Near.Recheck == nil:
					t.Errorf("%s: near %v, want a recheck: the host's reading %.2f s is below the job clock's %.2f s", c.origin, a.Near,
						a.Clocks.ContainerCPU, a.Clocks.OverrunJobCPU)
				}
			default:
				if a.Near == nil || a.Near.Recheck == nil || a.Clocks.OverrunRunning || a.Near.Overrun <= 1 || a.Near.Overrun > 1.25 {
					t.Errorf("%s: near %v, clocks %+v, want a recheck, ended within its overrun", c.origin, a.Near, a.Clocks)
				}
			}
		}
		if with.Scoring.OverrunDecided != decided || with.Scoring.Rechecked != 3-decided || without.Scoring.Rechecked != 3 || without.Scoring.OverrunDecided != 0 {
			t.Errorf("scoring %+v with overruns, %+v without: want %d decided by its overrun and %d rechecked, and 3 rechecked", with.Scoring, without.Scoring,
				decided, 3-decided)
		}
	})
}

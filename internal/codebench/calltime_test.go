package codebench

import (
	"slices"
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
)

// TestCallTimesOnlyWhereAsked: the child measures each call's own CPU time
// only for a job that asks (the ground truth, whose limits EvalPlus derives
// from those times); elsewhere it reports 0 and reads no clock. A header
// field lost on the way would give the ground truth zero times, and so
// every task the minimum limit.
func TestCallTimesOnlyWhereAsked(t *testing.T) {
	launch, _, _ := testSandbox(t)
	w := wire.NewWorker(launch)
	defer w.Close()
	const spin = 0.05
	program := `
import time
def spin(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
    return s
`
	for _, times := range []bool{true, false} {
		j := programJob("spin", program, []string{"[0.05]", "[0.05]"})
		j.Exact, j.Times = true, times
		recs := runJob(t, w, j)
		if len(recs) != 2 {
			t.Fatalf("times %v: %d records, want 2", times, len(recs))
		}
		for k, r := range recs {
			// The supervisor's clock may count in ticks (10 ms under gVisor).
			if r.Gap < spin-0.02 {
				t.Errorf("times %v, input %d: the supervisor measured %.3f s, under the %.2f s the call spins", times, k, r.Gap, spin)
			}
			if times && r.Time < spin {
				t.Errorf("input %d: the call's own time is %.3f s; want at least the %.2f s it spins", k, r.Time, spin)
			}
			if !times && r.Time != 0 {
				t.Errorf("input %d: a job that did not ask got a call time of %.3f s", k, r.Time)
			}
		}
	}
}

// TestCallTimesAreExact: the ground truth's call times are exact to well
// under a millisecond. The child runs under RLIMIT_CPU, and once a process
// CPU limit is armed Linux reads the process clock from a group timer that
// it brings up to date only at scheduler ticks (every 4 ms here) and a few
// other events. A call of pure computation then measures 0 or a whole
// tick, whatever it did. The child measures on its thread's clock, which
// is exact (runc; under gVisor every CPU clock counts in 10 ms ticks).
//
// The test checks what tells the two clocks apart: a tick clock reads 0
// for most calls of 0.3 ms and a whole tick for the others, an exact clock
// neither. It does not bound the spread of the times: on a loaded virtual
// machine the time the host takes a virtual CPU away still counts in the
// guest's thread clocks, and one CI run measured the same call at 0.097 ms
// and 0.487 ms.
func TestCallTimesAreExact(t *testing.T) {
	launch, _, _ := testSandbox(t)
	w := wire.NewWorker(launch)
	defer w.Close()
	// About 0.3 ms of arithmetic and no system call: nothing in the call
	// brings the group timer up to date.
	program := `
def work(n):
    return sum(range(n))
`
	inputs := make([]string, 20)
	for i := range inputs {
		inputs[i] = "[20000]"
	}
	j := programJob("work", program, inputs)
	j.Exact, j.Times = true, true
	recs := runJob(t, w, j)
	if len(recs) != len(inputs) {
		t.Fatalf("%d records, want %d", len(recs), len(inputs))
	}
	times := make([]float64, len(recs))
	for k, r := range recs {
		if r.Time <= 0 {
			t.Errorf("input %d: the call's own time is %g s for about 0.3 ms of arithmetic; a tick clock reads 0", k, r.Time)
		}
		times[k] = r.Time
	}
	// Half the 4 ms tick: a tick clock's calls that are not 0 read a whole
	// tick. The median, since a call the host slowed may read more.
	slices.Sort(times)
	if med := times[len(times)/2]; med >= 0.002 {
		t.Errorf("the median call of about 0.3 ms of arithmetic measured %.6f s (all: %v); a tick clock reads whole 4 ms ticks", med, times)
	}
}

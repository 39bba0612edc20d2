package humaneval

import "testing"

// TestCallTimesOnlyWhereAsked: the child measures each call's own CPU time
// only for a job that asks (the ground truth, whose limits EvalPlus derives
// from those times); elsewhere it reports 0 and reads no clock. A header
// field lost on the way would give the ground truth zero times, and so
// every task the minimum limit.
func TestCallTimesOnlyWhereAsked(t *testing.T) {
	launch, _, _ := testSandbox(t)
	w := &worker{launch: launch}
	defer w.close()
	const spin = 0.05
	program := `
import time
def spin(s):
    t = time.process_time()
    while time.process_time() - t < s:
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

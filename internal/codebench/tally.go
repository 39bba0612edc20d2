package codebench

import "github.com/reprolab/repro/internal/codebench/task"

import "sync"

// verdictTally counts, for progress, the candidate samples that have all
// their verdicts (one per phase), and how many of them passed every phase.
// It sees each verdict through the Scorer's Known and Decided hooks, which
// it wraps; it keeps two bytes a sample, not the results.
type verdictTally struct {
	mu              sync.Mutex
	phases          uint8
	seen            []uint8 // phases with a verdict, by sample index
	failed          []bool  // some phase did not pass, by sample index
	passed, failedN int
	report          func(passed, failed, samples int)
}

func newVerdictTally(samples, phases int, report func(passed, failed, samples int)) *verdictTally {
	return &verdictTally{phases: uint8(phases), seen: make([]uint8, samples), failed: make([]bool, samples), report: report}
}

// note counts one verdict of sample i and reports the counts when it was
// the sample's last.
func (v *verdictTally) note(i int, pr PhaseResult) {
	v.mu.Lock()
	if i < 0 || i >= len(v.seen) || v.seen[i] >= v.phases {
		v.mu.Unlock()
		return
	}
	v.seen[i]++
	v.failed[i] = v.failed[i] || pr.Status != StatusPass
	if v.seen[i] < v.phases {
		v.mu.Unlock()
		return
	}
	if v.failed[i] {
		v.failedN++
	} else {
		v.passed++
	}
	p, f, n := v.passed, v.failedN, len(v.seen)
	v.mu.Unlock()
	v.report(p, f, n)
}

// wrap returns Known and Decided hooks that do what known and decided
// (either may be nil) do and count each verdict.
func (v *verdictTally) wrap(known func(int, *task.Sample, task.Phase) (PhaseResult, bool),
	decided func(int, *task.Sample, task.Phase, PhaseResult, bool) error) (func(int, *task.Sample, task.Phase) (PhaseResult, bool), func(int, *task.Sample, task.Phase, PhaseResult, bool) error) {
	k := func(i int, smp *task.Sample, p task.Phase) (PhaseResult, bool) {
		if known == nil {
			return PhaseResult{}, false
		}
		pr, ok := known(i, smp, p)
		if ok {
			v.note(i, pr)
		}
		return pr, ok
	}
	d := func(i int, smp *task.Sample, p task.Phase, pr PhaseResult, shared bool) error {
		if decided != nil {
			if err := decided(i, smp, p, pr, shared); err != nil {
				return err
			}
		}
		v.note(i, pr)
		return nil
	}
	return k, d
}

package codebench

import (
	"fmt"
	"strings"

	"github.com/reprolab/repro/internal/codebench/wire"
)

// DefaultNearLimitMargin is the default RunLimits.NearLimitMargin: a pass
// within 20 % of its limit is time-sensitive, as a slower machine, or
// EvalPlus's wall-clock alarm on a loaded one, may fail it.
const DefaultNearLimitMargin = 0.2

// RecheckRule names how a time-sensitive verdict and its re-run combine:
// CPU time that other work adds to a run is never taken away again, so of
// the two measurements the one that finished within its limits decides. A
// pass in either run, where the other was stopped at a time limit, is
// final; in every other case the first verdict stands.
const RecheckRule = "recheck-faster-decides"

// Which run of a rechecked verdict decided it (NearLimit.DecidedBy).
const (
	DecidedByFirst   = "first"
	DecidedByRecheck = "recheck"
)

// NearLimit names a verdict that depends on the time limit, with the CPU
// seconds against the limit: a pass whose slowest input (or whose whole
// list) used 1 - RunLimits.NearLimitMargin of its limit or more, or a
// timeout, unless its input was still running at the end of its overrun
// (RunLimits.Overrun times its limit: the same margin, on the other side).
// repro decides a timeout at its limit, so a timeout's CPU is the limit it
// exceeded; Overrun, where set, is what the input used in all, having
// finished within its overrun (or been stopped by another limit there).
//
// Such a verdict is run once more in a fresh process (RecheckRule):
// Recheck is that run's measurement, whether or not it was itself near the
// limit, and DecidedBy says which of the two runs gave the verdict.
type NearLimit struct {
	Status Status  `json:"status"` // the phase's status: pass, or the status the limit gave
	Input  int     `json:"input"`  // the input that came nearest its limit, -1 for the list (or the load)
	CPU    float64 `json:"cpu"`    // CPU seconds it used
	Limit  float64 `json:"limit"`  // its CPU limit in seconds
	// Overrun: for a timeout at an input's limit, the CPU seconds the
	// input used in all, let run on past its limit (PhaseClocks.OverrunCPU).
	Overrun float64 `json:"overrun_cpu,omitempty"`
	// Load: the program's loading, up to the load mark, under the load
	// allowance (Input is then -1).
	Load bool `json:"load,omitempty"`

	Recheck   *NearLimit `json:"recheck,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"` // "first" or "recheck", with Recheck
	// AtLimit is set on a measurement of a run that was stopped at a time
	// limit (a re-run's measurement, whose Status alone does not say so).
	AtLimit bool `json:"at_limit,omitempty"`
}

// String is the one-line account in reports.
func (n *NearLimit) String() string {
	s := n.measure()
	if n.Recheck != nil {
		s += "; re-run: " + n.Recheck.short()
		if n.DecidedBy == DecidedByRecheck {
			s += "; the re-run decides"
		} else {
			s += "; the first run decides"
		}
	}
	return s
}

func (n *NearLimit) what() string {
	if n.Load {
		return "loading the program"
	}
	if n.Input < 0 {
		return "the list"
	}
	return fmt.Sprintf("input %d", n.Input)
}

func (n *NearLimit) measure() string {
	if n.Status == StatusPass {
		return fmt.Sprintf("passed near the limit: %s used %.2f of %.2f CPU s (%.0f%%)", n.what(), n.CPU, n.Limit, 100*n.CPU/n.Limit)
	}
	s := fmt.Sprintf("stopped at the limit: %s used more than %.2f CPU s", n.what(), n.Limit)
	if n.Overrun > 0 {
		s += fmt.Sprintf(" (%.2f in all, let run past it)", n.Overrun)
	}
	return s
}

// short is a re-run's measurement, whatever its verdict.
func (n *NearLimit) short() string {
	st := string(n.Status)
	if n.Status != StatusPass {
		st += ", not at a time limit"
	}
	switch {
	case n.AtLimit:
		return fmt.Sprintf("%s, stopped at the limit: %s used more than %.2f CPU s", n.Status, n.what(), n.Limit)
	case n.Limit > 0:
		return fmt.Sprintf("%s, %s used %.2f of %.2f CPU s (%.0f%%)", st, n.what(), n.CPU, n.Limit, 100*n.CPU/n.Limit)
	}
	return st
}

// combineRecheck is RecheckRule: first is a time-sensitive verdict
// (first.Near set), again its re-run, measured by m. The result is the
// deciding run's verdict, with first's measurement in Near and m in
// Near.Recheck.
func combineRecheck(first, again PhaseResult, m NearLimit) PhaseResult {
	n := *first.Near
	m.Recheck, m.DecidedBy = nil, ""
	n.Recheck, n.DecidedBy = &m, DecidedByFirst
	out := first
	if first.Status != StatusPass && again.Status == StatusPass {
		out, n.DecidedBy = again, DecidedByRecheck
		if out.Clocks != nil {
			c := *out.Clocks
			c.Run = RunRecheck
			if again.Exact {
				c.Run = RunRecheckExact
			}
			out.Clocks = &c
		}
	}
	out.Near = &n
	return out
}

// cpuTally follows a job's CPU time input by input against its limits.
// Input 0's record counts from the load mark; the loading before it has
// the load allowance (firstExtra) alone.
type cpuTally struct {
	limits     []float64
	firstExtra float64
	total      float64
	worst      NearLimit
	share      float64
	// over names the first record that came over its input's limit ("" for
	// none): the supervisor stops such a job, so a pass never has one.
	over string
}

func newCPUTally(j *wire.Job) *cpuTally {
	return &cpuTally{limits: j.Limits, firstExtra: j.FirstExtra, worst: NearLimit{Input: -1}}
}

// add counts input k's record, cpu seconds since the previous one.
func (c *cpuTally) add(k int, cpu float64) {
	if k < 0 || k >= len(c.limits) {
		return
	}
	lim := c.limits[k]
	c.total += cpu
	if c.over == "" && cpu > lim {
		c.over = fmt.Sprintf("input %d used %.2f s of CPU time, over its limit of %.2f s", k, cpu, lim)
	}
	if lim > 0 && cpu/lim > c.share {
		c.share, c.worst = cpu/lim, NearLimit{Input: k, CPU: cpu, Limit: lim}
	}
}

// measure returns the measurement of a phase that ended with res, under
// the list limit phaseLimit: the input, the load or the list that came
// nearest its limit, or the limit a timeout exceeded.
func (c *cpuTally) measure(res PhaseResult, end wire.JobEnd, phaseLimit float64) NearLimit {
	if end.Status == wire.EndTimeout {
		k := end.Records
		n := NearLimit{Status: res.Status, Input: -1, CPU: phaseLimit, Limit: phaseLimit, AtLimit: true}
		switch {
		case isLoadLimit(end.Detail):
			n = NearLimit{Status: res.Status, Input: -1, Load: true, CPU: c.firstExtra, Limit: c.firstExtra, AtLimit: true}
		case k < len(c.limits) && (res.Status == StatusFail || !isListLimit(end.Detail)):
			lim := c.limits[k]
			n = NearLimit{Status: res.Status, Input: k, CPU: lim, Limit: lim, AtLimit: true, Overrun: end.PastCPU}
		}
		return n
	}
	n, share := c.worst, c.share
	load := end.LoadCPU
	if len(c.limits) == 0 {
		// A job with no inputs is held to its load allowance to its end.
		load = end.CPU
	}
	if c.firstExtra > 0 && load/c.firstExtra > share {
		n, share = NearLimit{Input: -1, Load: true, CPU: load, Limit: c.firstExtra}, load/c.firstExtra
	}
	// The list's CPU time counts the loading too: the supervisor's whole
	// figure where it reported one.
	total := max(end.CPU, end.LoadCPU+c.total)
	if phaseLimit > 0 && total/phaseLimit > share {
		n = NearLimit{Input: -1, CPU: total, Limit: phaseLimit}
	}
	n.Status = res.Status
	return n
}

// near returns the NearLimit of a phase that ended with res, under the
// list limit phaseLimit, or nil where the verdict does not depend on the
// limit: a pass below share of its limit, a failure on its output, or a
// timeout whose input was still running at the end of its overrun
// by every clock (PhaseClocks.OverrunDecided on res's clocks, which the
// scorer counts by too), as far past its limit as a pass below
// share is within it.
func (c *cpuTally) near(res PhaseResult, end wire.JobEnd, phaseLimit, share float64) *NearLimit {
	n := c.measure(res, end, phaseLimit)
	switch {
	case res.Status == StatusPass:
		if n.Limit <= 0 || n.CPU/n.Limit < share {
			return nil
		}
	case end.Status != wire.EndTimeout, res.Clocks.OverrunDecided():
		return nil
	}
	n.AtLimit = false
	return &n
}

// isListLimit reports whether the supervisor's detail names the list's
// limit rather than an input's.
func isListLimit(detail string) bool {
	return strings.HasPrefix(detail, "the list")
}

// isLoadLimit reports whether the supervisor's detail names the load
// allowance (the program's loading, before the load mark).
func isLoadLimit(detail string) bool {
	return strings.HasPrefix(detail, "loading the program")
}

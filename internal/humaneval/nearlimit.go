package humaneval

import "fmt"

// NearLimitShare is the share of its CPU limit at which a passing input,
// or a passing list, makes the verdict time-sensitive: within 20 % of the
// limit, a slower machine, or EvalPlus's wall-clock alarm on a loaded one,
// may fail it.
const NearLimitShare = 0.8

// NearLimit names a verdict that depends on the time limit, with the CPU
// seconds against the limit: a pass whose slowest input (or whose whole
// list) used NearLimitShare of its limit or more, or a timeout. repro
// stops a program at its limit, so a timeout's CPU is the limit it
// exceeded; whether it would have finished within twice the limit is
// measured by scoring again with a larger --gt-time-limit-factor.
type NearLimit struct {
	Status Status  `json:"status"` // the phase's status: pass, or the status the limit gave
	Input  int     `json:"input"`  // the input that came nearest its limit, -1 for the list
	CPU    float64 `json:"cpu"`    // CPU seconds it used
	Limit  float64 `json:"limit"`  // its CPU limit in seconds
}

// String is the one-line account in reports.
func (n *NearLimit) String() string {
	what := fmt.Sprintf("input %d", n.Input)
	if n.Input < 0 {
		what = "the list"
	}
	if n.Status == StatusPass {
		return fmt.Sprintf("passed near the limit: %s used %.2f of %.2f CPU s (%.0f%%)", what, n.CPU, n.Limit, 100*n.CPU/n.Limit)
	}
	return fmt.Sprintf("stopped at the limit: %s used more than %.2f CPU s", what, n.Limit)
}

// cpuTally follows a job's CPU time input by input against its limits.
type cpuTally struct {
	limits     []float64
	firstExtra float64
	total      float64
	worst      NearLimit
	share      float64
}

func newCPUTally(j *job) *cpuTally {
	return &cpuTally{limits: j.Limits, firstExtra: j.FirstExtra, worst: NearLimit{Input: -1}}
}

// add counts input k's record, cpu seconds since the previous one.
func (c *cpuTally) add(k int, cpu float64) {
	if k < 0 || k >= len(c.limits) {
		return
	}
	lim := c.limits[k]
	if k == 0 {
		lim += c.firstExtra
	}
	c.total += cpu
	if lim > 0 && cpu/lim > c.share {
		c.share, c.worst = cpu/lim, NearLimit{Input: k, CPU: cpu, Limit: lim}
	}
}

// near returns the NearLimit of a phase that ended with res, under the
// list limit phaseLimit, or nil where the verdict does not depend on the
// limit.
func (c *cpuTally) near(res PhaseResult, end jobEnd, phaseLimit float64) *NearLimit {
	switch {
	case res.Status == StatusPass:
		n := c.worst
		if phaseLimit > 0 && c.total/phaseLimit > c.share {
			n = NearLimit{Input: -1, CPU: c.total, Limit: phaseLimit}
			c.share = c.total / phaseLimit
		}
		if c.share < NearLimitShare {
			return nil
		}
		n.Status = StatusPass
		return &n
	case end.Status == endTimeout:
		k := end.Records
		n := NearLimit{Status: res.Status, Input: -1, CPU: phaseLimit, Limit: phaseLimit}
		if k < len(c.limits) && (res.Status == StatusFail || !isListLimit(end.Detail)) {
			lim := c.limits[k]
			if k == 0 {
				lim += c.firstExtra
			}
			n = NearLimit{Status: res.Status, Input: k, CPU: lim, Limit: lim}
		}
		return &n
	}
	return nil
}

// isListLimit reports whether the supervisor's detail names the list's
// limit rather than an input's.
func isListLimit(detail string) bool {
	return len(detail) >= 8 && detail[:8] == "the list"
}

package codebench

import (
	"fmt"

	"github.com/reprolab/repro/internal/codebench/wire"
)

// The runs a phase's verdict can come from (PhaseClocks.Run).
const (
	// RunFirst: the phase's first run decided.
	RunFirst = "first"
	// RunExact: the first run left a window open (PhaseResult.Exact), and
	// its re-run with one input at a time decided.
	RunExact = "exact"
	// RunRecheck: the verdict was time-sensitive, and its second run, in a
	// fresh process, decided (RecheckRule).
	RunRecheck = "recheck"
	// RunRecheckExact: as RunRecheck, where that second run was itself run
	// again with one input at a time.
	RunRecheckExact = "recheck-exact"
)

// PhaseClocks are the times of the run that decided a phase (Run), each
// named by the clock that took it. For a pass the job's CPU time is within
// its limit, and the container's within the host's budget: a PhaseResult
// that says otherwise is not a pass (settlePass), and no results file
// holds one (WriteResults).
type PhaseClocks struct {
	Run string `json:"run"`
	// JobCPU is the job's CPU seconds on the supervisor's job clock (the
	// container's cgroup less the supervisor's and the zygote's own under
	// runc, the sum over /proc under runsc), from the child's L record to
	// the moment the job was decided (its last result, the check that
	// stopped it, or the child's end), loading included; LoadCPU is the
	// part before the load mark. CPULimit is the list's CPU limit
	// (PhaseResult.Limit), which the supervisor applies to JobCPU.
	JobCPU   float64 `json:"job_cpu_s"`
	LoadCPU  float64 `json:"load_cpu_s"`
	CPULimit float64 `json:"cpu_limit_s"`
	// ClockScale, where above 1, is how many times CPULimit the
	// supervisor applied to JobCPU: under gVisor its job clock counts a
	// loaded host's waits as the program's time, so there the host's
	// reading of the container (ContainerCPU) holds the list's limit,
	// and the job clock only at ClockScale times it, as a backstop.
	ClockScale float64 `json:"clock_scale,omitempty"`
	// ContainerCPU is the container's CPU seconds from just before the
	// host sent the job to the end of the job as the host read its cgroup,
	// with the supervisor's own work for the job (the fork among it);
	// ContainerBudget is what the host allows (the job's own limit plus
	// package wire's hostClockSlack).
	// Both 0 where the host had no clock of the container.
	ContainerCPU    float64 `json:"container_cpu_s,omitempty"`
	ContainerBudget float64 `json:"container_cpu_budget_s,omitempty"`
	// Wall is the run's wall seconds on the supervisor's monotonic clock,
	// from the child's start to the job's end: no limit applies to it
	// (a loaded host stretches it), only the idle backstop.
	Wall float64 `json:"wall_s"`
	// OverrunCPU, for a run stopped at an input's limit, is the CPU
	// seconds on the job clock that the input's call used in all, let run
	// on past its limit to RunLimits.Overrun times it (JobCPU stays the
	// job's time when the limit was found struck), and OverrunJobCPU the job clock's
	// time from the L record to the overrun's end; OverrunRunning: the
	// supervisor found the call still running there (false where it ended
	// first). The timeout is not time-sensitive where it was still running
	// and ContainerCPU covers OverrunJobCPU (OverrunDecided). All zero
	// where no input struck its limit.
	OverrunCPU     float64 `json:"overrun_cpu_s,omitempty"`
	OverrunJobCPU  float64 `json:"overrun_job_cpu_s,omitempty"`
	OverrunRunning bool    `json:"overrun_running,omitempty"`
}

// OverrunDecided reports whether these clocks make a timeout not
// time-sensitive by its overrun (wire.OverrunDecides): its call still ran
// at its overrun's end by the job clock, and the host's reading of the
// container covers the job clock's time to then.
func (c *PhaseClocks) OverrunDecided() bool {
	return c != nil && wire.OverrunDecides(c.OverrunRunning, c.OverrunJobCPU, c.ContainerCPU, c.ContainerBudget)
}

// clocksOf are the clocks of one run that ended with end, under the list
// limit limit.
func clocksOf(run string, end wire.JobEnd, limit float64) *PhaseClocks {
	return &PhaseClocks{
		Run: run, JobCPU: end.CPU, LoadCPU: end.LoadCPU, CPULimit: limit, ClockScale: scaleAbove1(end.ClockScale),
		ContainerCPU: end.HostCPU, ContainerBudget: end.HostBudget, Wall: end.Elapsed,
		OverrunCPU: end.PastCPU, OverrunJobCPU: end.PastJobCPU, OverrunRunning: end.PastRunning,
	}
}

// scaleAbove1 is a clock scale as PhaseClocks keeps it: 0 (omitted) for
// one of 1 or less.
func scaleAbove1(scale float64) float64 {
	if scale > 1 {
		return scale
	}
	return 0
}

// jobClockScale is how many times the list's limit JobCPU is held to:
// ClockScale, at most wire.MaxClockScale, where the host read the
// container (ContainerBudget) and so held the list's limit itself; else 1.
func (c *PhaseClocks) jobClockScale() float64 {
	if c.ClockScale > 1 && c.ContainerBudget > 0 {
		return min(c.ClockScale, wire.MaxClockScale)
	}
	return 1
}

// PastLimit reports whether the run used more than a limit allows, by the
// clock that holds it: the job clock past the list's limit times the
// scale it is held to (jobClockScale), or the host's reading of the
// container past its budget. No pass is (settlePass); a timeout may be.
func (c *PhaseClocks) PastLimit() bool { return c.overLimit() != "" }

// LimitShare is the largest share of a limit the run used, by the clock
// that holds each limit (as PastLimit reads them): the job clock's time
// over the list's limit times the scale it is held to, and the host's
// reading of the container over its budget. A pass's share is at most 1
// (settlePass); 0 for nil clocks or clocks without a list limit.
func (c *PhaseClocks) LimitShare() float64 {
	if c == nil || c.CPULimit <= 0 {
		return 0
	}
	share := c.JobCPU / (c.CPULimit * c.jobClockScale())
	if c.ContainerBudget > 0 {
		share = max(share, c.ContainerCPU/c.ContainerBudget)
	}
	return share
}

// overLimit says how a pass with these clocks would exceed a limit, ""
// where it does not.
func (c *PhaseClocks) overLimit() string {
	switch {
	case c == nil:
		return ""
	case c.CPULimit > 0 && c.JobCPU > c.CPULimit*c.jobClockScale():
		if k := c.jobClockScale(); k > 1 {
			return fmt.Sprintf("the list used %.2f s of CPU time (%s run, the supervisor's job clock), over %g times its limit of %.2f s", c.JobCPU, c.Run, k, c.CPULimit)
		}
		return fmt.Sprintf("the list used %.2f s of CPU time (%s run, the supervisor's job clock), over its limit of %.2f s", c.JobCPU, c.Run, c.CPULimit)
	case c.ContainerBudget > 0 && c.ContainerCPU > c.ContainerBudget:
		return fmt.Sprintf("the job used %.2f s of CPU time (%s run, the host's reading of its container), over the %.2f s its limits allow", c.ContainerCPU, c.Run, c.ContainerBudget)
	}
	return ""
}

// settlePass keeps a pass only where its deciding run stayed within its
// limits by every clock; else the phase is a timeout, as the limit that
// struck would have made it. The supervisor and the host stop a job at
// its limits, so this never changes an honest verdict: it makes a pass
// over a limit impossible whatever reached this point.
func settlePass(pr *PhaseResult) {
	if pr.Status != StatusPass {
		return
	}
	if why := pr.Clocks.overLimit(); why != "" {
		pr.Status, pr.Reason, pr.FailInput = StatusTimeout, why, -1
	}
}

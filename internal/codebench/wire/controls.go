package wire

import "time"

// The host's controls that the integrity suites must show are needed.
// Production never changes them: each is on (or, for ForceClockScale, off)
// in every run, and only a controls-are-needed test in package codebench
// flips one, for one of its rows, to show that an integrity case then
// fails.
var (
	// HostClockOn: the host holds jobs to their limits by its own clock.
	// Only TestHarnessControlsAreNeeded turns it off, to show that the
	// integrity suite needs it.
	HostClockOn = true

	// HostBudgetOwnLimits: the host's clock allows a job no more than its
	// own limits do (jobCPULimit). Only TestClockControlsAreNeeded turns
	// it off, to show that the integrity suite needs it.
	HostBudgetOwnLimits = true

	// HostLoadClockOn: the host holds a job's loading to the load
	// allowance by its own clock (hostLoadBudget), as it must where the
	// supervisor scales its limits (clockScale). Only
	// TestClockControlsAreNeeded turns it off.
	HostLoadClockOn = true

	// ForceClockScale scales the supervisor's load and list limits
	// whatever its clock: only TestClockControlsAreNeeded sets it, to show
	// under runc (whose job clock is the cgroup's, so that the case does
	// not depend on the host's load) what the host's load clock holds
	// under gVisor.
	ForceClockScale = false
)

// clockRefresh is how old a reading of the container's CPU usage may be
// when the host judges a frame by it: the frames of one batch arrive
// within microseconds, and reading the cgroup for each of them cost the
// host more CPU than all its judging. A job gains at most clockRefresh of
// wall time per CPU of CPU time from it, far inside hostClockSlack.
// Production never changes it; only this package's tests, whose fake
// clock runs faster than wall time, set it to 0
// (TestHostClockHoldsTheJob).
var clockRefresh = time.Millisecond

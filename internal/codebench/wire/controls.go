package wire

import (
	"sync/atomic"
	"time"
)

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

// heartbeatTimeout is how long a supervisor running a job may stay silent
// (it sends a heartbeat at least every second); heartbeatWallMax is how
// long a silent supervisor whose container got less than heartbeatCPU is
// waited for. Production keeps 20 s and 45 s; each job reads them once, as
// it starts.
var heartbeatTimeout, heartbeatWallMax = newDurationVar(20 * time.Second), newDurationVar(45 * time.Second)

// durationVar is a duration that one goroutine may set while others read
// it.
type durationVar struct{ v atomic.Int64 }

func newDurationVar(d time.Duration) *durationVar {
	var v durationVar
	v.v.Store(int64(d))
	return &v
}

func (d *durationVar) Load() time.Duration { return time.Duration(d.v.Load()) }

func (d *durationVar) swap(to time.Duration) time.Duration { return time.Duration(d.v.Swap(int64(to))) }

// SetHeartbeat sets how long a supervisor running a job may stay silent
// and how long a silent one whose container got little CPU time is waited
// for, for the jobs that start after it, and returns a function that puts
// back what they were. Production never calls it; only the integrity case
// whose attacker stops the supervisor shortens them, so that each of its
// lost jobs does not wait out 45 s.
func SetHeartbeat(silence, starved time.Duration) (restore func()) {
	was, wasStarved := heartbeatTimeout.swap(silence), heartbeatWallMax.swap(starved)
	return func() {
		heartbeatTimeout.swap(was)
		heartbeatWallMax.swap(wasStarved)
	}
}

package codebench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// The integrity suite's cases about state that outlives a job: what a job
// leaves in its container that the process table does not show. Two
// mechanisms hold them: the supervisor's check of the container's unix
// sockets and memory charge after each job, which retires a container a job
// left changed (the next job runs in a fresh one), and the fresh container
// of every near-limit re-run. Kernel counters that one honest job moves
// (the last pid, /tmp's inode numbers) still reach the next job of the same
// container: the invariants table of docs/humaneval.md (its row "Not
// held") says what would close that and what it costs.

// socketLeakCase leaves 1,000 datagram sockets, each holding its own
// descriptor and 192 KiB in its queue: gVisor frees none of them (Linux
// does), 188 MiB that no process holds and 1,000 names any later job can
// read. (2,000 of them, 375 MiB, make the next honest sample fail; half
// keeps the case within the load allowance under runsc.)
var socketLeakCase = attack("state/socket-leak.py")

// nearLimitCase saves its progress for its own re-run: it moves /tmp's
// inode numbers until the last file made is 60 modulo 256, then answers
// input 0, and input 1 only after 1.1 CPU s, past its limit of 1 s but
// within its overrun (a time-sensitive timeout, which is re-run). A run that finds the mark
// (the next file it makes, or the job folder the supervisor made for it,
// lies a few numbers past 60) answers at once and passes. Its re-run must
// not find it.
var nearLimitCase = attack("state/near-limit-progress.py")

// TestStateIntegritySuite runs the state cases under each runtime: the
// leaker, the honest sample and the program that saves its progress, in
// one run after the self-check.
func TestStateIntegritySuite(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		launch, _, img := testSandboxOn(t, e)
		d := testDataset(t, "humanevalplus-mini-v0.1.10")
		rep := runStateCases(t, launch, d, testTruth(t, d, img), stateLeaker, stateHonest, stateSaver)
		for _, b := range append(socketLeakBroke(t, rep, e.Runtime()), nearLimitBroke(t, rep)...) {
			t.Error(b)
		}
	})
}

// The samples of the state cases, by their origin.
const (
	stateLeaker = "leaker"
	stateHonest = "honest"
	stateSaver  = "saver"
)

var stateCode = map[string]string{stateLeaker: socketLeakCase, stateHonest: honestAfter, stateSaver: nearLimitCase}

// runStateCases runs the self-check, then the named samples (stateCode)
// on integrityTask's base inputs, in this order, one supervisor at a
// time, and returns the report. (Base alone: a second phase would be a
// later job of the same container, whose counters the first moved, a
// channel the suite does not claim closed.)
func runStateCases(t *testing.T, launch wire.Launcher, d *task.Dataset, truth *Truth, names ...string) *StagesReport {
	t.Helper()
	tk := d.Task(integrityTask)
	var samples []*task.Sample
	for i, name := range names {
		samples = append(samples, &task.Sample{TaskID: tk.ID, ID: i, Solution: strings.ReplaceAll(stateCode[name], "{canon}", tk.Program()),
			Origin: name})
	}
	// runAttackThenHonest's limits: the honest sample's checks load
	// within the 3 s allowance under runsc.
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 3
	rep, err := RunStages(context.Background(), StagesConfig{
		Dataset: d, Tasks: []*task.Task{tk}, Samples: samples, Launch: launch, Truth: truth,
		Limits: limits, Parallel: 1, BaseOnly: true,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !rep.SelfCheck.OK() {
		t.Fatalf("self-check: %+v", rep.SelfCheck)
	}
	return rep
}

// stateResult returns the base verdict of the sample named origin.
func stateResult(t *testing.T, rep *StagesReport, origin string) PhaseResult {
	t.Helper()
	for _, r := range rep.Results {
		if r.Sample.Origin == origin {
			return r.Base
		}
	}
	t.Fatalf("no sample %q in the run", origin)
	return PhaseResult{}
}

// socketLeakBroke returns what broke in runStateCases's report about the
// leaker: the honest sample after it not passing, or (under runsc, where
// the sockets outlive the job) no container retired.
func socketLeakBroke(t *testing.T, rep *StagesReport, rt sandbox.Runtime) (broke []string) {
	pr := stateResult(t, rep, stateLeaker)
	t.Logf("leaker: %s (%s)", pr.Status, pr.Reason)
	if pr := stateResult(t, rep, stateHonest); pr.Status != StatusPass {
		broke = append(broke, fmt.Sprintf("honest sample after the leaker: %s (%s), want pass", pr.Status, pr.Reason))
	}
	t.Logf("containers retired: %d", rep.Scoring.Retired)
	if rt == sandbox.Runsc && rep.Scoring.Retired == 0 {
		broke = append(broke, "no container was retired after the leaker's job (gVisor keeps its sockets)")
	}
	return broke
}

// nearLimitBroke returns what broke in runStateCases's report about
// nearLimitCase: its timeout not run again, or a pass.
func nearLimitBroke(t *testing.T, rep *StagesReport) (broke []string) {
	pr := stateResult(t, rep, stateSaver)
	t.Logf("program that saves its progress: %s (%s)", pr.Status, pr.Reason)
	if pr.Near == nil || pr.Near.Recheck == nil {
		broke = append(broke, "its first run's timeout was not run again")
	}
	if pr.Status == StatusPass {
		broke = append(broke, "its re-run found the first run's work and passed")
	}
	return broke
}

// stateCheckEdit takes the check of the container's sockets and memory
// after each job out of supervisor.py.
var stateCheckEdit = [2]string{"    why = container_state()\n", "    why = None\n"}

// stateControls are the mechanisms behind the state cases, each with what
// takes it out (an edit of supervisor.py, or a switch of the host's) and
// what must then break.
var stateControls = []struct {
	control string
	edits   [][2]string
	runtime sandbox.Runtime
	host    *bool
	samples []string // the state cases' samples the row runs
	broke   func(t *testing.T, rep *StagesReport, rt sandbox.Runtime) []string
}{
	{control: "container state after each job", runtime: sandbox.Runsc, edits: [][2]string{stateCheckEdit},
		samples: []string{stateLeaker, stateHonest}, broke: socketLeakBroke},
	{control: "fresh container for a near-limit re-run", host: &freshRecheckContainer, samples: []string{stateSaver},
		broke: func(t *testing.T, rep *StagesReport, _ sandbox.Runtime) []string { return nearLimitBroke(t, rep) }},
}

// TestStateControlsAreNeeded takes one mechanism out at a time and
// requires its state case to break.
func TestStateControlsAreNeeded(t *testing.T) {
	e0 := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e0)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	pinned := wire.HarnessDigest
	t.Cleanup(func() { wire.HarnessDigest = pinned })
	for _, m := range stateControls {
		t.Run(strings.ReplaceAll(m.control, " ", "_"), func(t *testing.T) {
			e := controlRow(t, e0, m.runtime, m.host)
			launch := editedHarness(t, e, img, m.edits)
			broke := m.broke(t, runStateCases(t, launch, d, testTruth(t, d, img), m.samples...), e.Runtime())
			if len(broke) == 0 {
				t.Fatalf("with %s removed, its case still holds: the suite does not test that mechanism", m.control)
			}
			t.Logf("with %s removed, the case breaks as it must: %v", m.control, broke)
		})
	}
}

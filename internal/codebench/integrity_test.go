package codebench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// The integrity suite: no sample may see, poison or outlast another job.
// Each case is one run with one supervisor container: the self-check (the
// canonical solution of HumanEval/55 on base and plus inputs), then the
// attacker, then an honest sample. The cheat must not pass; the honest
// sample, which also checks that it finds the sandbox as a fresh job does,
// must pass. A case that kills its container hands the honest sample a
// fresh one, which is the design.

// integrityTask is fib(n): base inputs 10, 1, 8, 11, 12, outputs 55, 1, 21,
// 89, 144.
const integrityTask = "HumanEval/55"

// honestAfter is the honest sample: the canonical solution, run only if the
// job finds its process as a fresh job has it (priority, scheduling,
// affinity, limits), can use 100 MiB, and finds /tmp empty.
var honestAfter = attack("honest/fresh-job.py")

// framing writes frames as the supervisor's channel carries them, without
// the tag a job cannot compute; JOB is the job's id, read from its header,
// which is still in the job's memory.
var framing = attack("integrity/parts/framing.py")

// pids names the zygote (the parent) and the supervisor (its parent).
var pids = attack("integrity/parts/pids.py")

type integrityCase struct {
	name string
	code string   // "{canon}" is the canonical program, "{n}" the number of base inputs
	want []Status // allowed statuses of the attacker in both phases
}

// anyStatus: a sample that only tries to spoil later jobs may pass itself.
var anyStatus = []Status{StatusPass, StatusFail, StatusTimeout}

func integrityCases() []integrityCase {
	return []integrityCase{
		{"memory scan for the records of earlier jobs", attack("integrity/memory-scan-for-earlier-results.py"), onlyFail},
		{"memory scan for any record of an earlier job", attack("integrity/memory-scan-detector.py"), onlyFail},
		{"limits and scheduling of the zygote and the supervisor", pids + attack("integrity/throttle-zygote-and-supervisor.py"), anyStatus},
		{"SysV shared memory, semaphores and queues left behind", attack("integrity/sysv-ipc-left-behind.py"), anyStatus},
		{"CPU work in grandchildren while the child waits at nice 19", attack("integrity/cpu-in-grandchildren-at-nice-19.py"), []Status{StatusTimeout, StatusFail}},
		{"sleep while a grandchild at nice 19 looks busy", attack("integrity/sleep-beside-busy-grandchild.py"), []Status{StatusTimeout, StatusFail}},
		{"kill the zygote", attack("integrity/kill-zygote.py"), onlyFail},
		{"stop the zygote", attack("integrity/stop-zygote.py"), failOrTime},
		{"kill the supervisor", pids + attack("integrity/kill-supervisor.py"), onlyFail},
		{stopsTheSupervisor, pids + attack("integrity/stop-supervisor.py"), failOrTime},
		{"descriptors and memory of the zygote and the supervisor", pids + attack("integrity/read-zygote-and-supervisor.py"), onlyFail},
		{"frames forged on the supervisor's stdout", pids + framing + attack("integrity/forge-frames-on-supervisor-stdout.py"), onlyFail},
		{"frames taken from the supervisor's stdout and written back with the right answers", pids + framing + attack("integrity/rewrite-frames-on-supervisor-stdout.py"), onlyFail},
		{"frames taken from the supervisor's stdin", pids + attack("integrity/steal-supervisor-stdin.py"), onlyFail},
		{"bytes planted on the supervisor's stdin for the next job", pids + framing + attack("integrity/plant-frames-on-supervisor-stdin.py"), anyStatus},
		{"CPU in workers nobody waits for", attack("integrity/cpu-in-unwaited-workers.py"), []Status{StatusTimeout, StatusFail}},
		// Attacks on the host's clock and the process-table check.
		{"CPU in workers nobody waits for, a little in every input", attack("integrity/cpu-in-unwaited-workers-every-input.py"), []Status{StatusTimeout, StatusFail}},
		{"a stopped process, a zombie and a new session left behind", attack("integrity/stopped-zombie-and-session-left.py"), failOrTime},
		{"a process whose first thread exited, left for the next job", attack("integrity/process-past-its-first-thread.py"), onlyFail},
		{"a name in /dev/mqueue and a socket on the loopback", attack("integrity/mqueue-and-loopback-socket-left.py"), anyStatus},
		{"files and a daemon left for the next job", attack("integrity/files-and-daemon-left.py"), onlyFail},
		// The result pipe relayed through a thread that holds input 0's
		// result until input 1's is out: had input 1 been the child's
		// from the start, its 1.6 s (over its 1 s limit; EvalPlus's alarm
		// fails it) would be charged to input 0, whose limit also covers
		// loading (2 s), and pass.
		{"a result held back, so that the next input's CPU time is charged to it", resultRelay + attack("integrity/result-held-back.py") + onCall, onlyFail},
		// The same relay sends, with input 0's result, a result for input
		// 1 (fib(1), right for base) before input 1 is released, and drops
		// the child's own result for input 1: the supervisor takes no
		// result written before its input's release.
		{"a result for an input not yet released, sent with the one before", resultRelay + attack("integrity/result-before-release.py") + onCall, onlyFail},
	}
}

// onCall follows the canonical fib: ON_CALL[k](), where the program sets
// it, runs as fib's k-th call begins.
var onCall = attack("integrity/parts/on-call.py")

// resultRelay moves the child's result pipe (descriptor 3) behind a pipe
// of the program's own: relay(f) starts a thread that hands each whole
// record written there to f and sends on what f returns; unrelay() puts
// the child's pipe back.
var resultRelay = attack("integrity/parts/result-relay.py")

// stopsTheSupervisor is the case whose attacker stops the supervisor: the
// host waits out the silence of each of its two lost jobs, 45 s with
// production's heartbeat, which the suite shortens for it to
// quickHeartbeat of silence and quickHeartbeatStarved in all (the path is
// the same: a silent supervisor whose container got little CPU time is
// waited for, then its job ends as lost).
const (
	stopsTheSupervisor    = "stop the supervisor"
	quickHeartbeat        = 8 * time.Second
	quickHeartbeatStarved = 15 * time.Second
)

// TestIntegritySuite runs every integrity attack under each runtime.
func TestIntegritySuite(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) { testIntegritySuite(t, e) })
}

func testIntegritySuite(t *testing.T, e *sandbox.Engine) {
	launch, _, img := testSandboxOn(t, e)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	truth := testTruth(t, d, img)
	task := d.Task(integrityTask)
	for _, c := range integrityCases() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if c.name == stopsTheSupervisor {
				t.Cleanup(wire.SetHeartbeat(quickHeartbeat, quickHeartbeatStarved))
			}
			att, hon := runAttackThenHonest(t, launch, d, truth, task, c.code)
			for _, pr := range []*PhaseResult{&att.Base, att.Plus} {
				if !slices.Contains(c.want, pr.Status) {
					t.Errorf("attacker: status %s (%s), want one of %v", pr.Status, pr.Reason, c.want)
				} else {
					t.Logf("attacker: %s (%s)", pr.Status, pr.Reason)
				}
			}
			for _, pr := range []*PhaseResult{&hon.Base, hon.Plus} {
				if pr.Status != StatusPass {
					t.Errorf("honest sample after the attacker: status %s (%s), want pass", pr.Status, pr.Reason)
				}
			}
		})
	}
}

// TestJobsHashWithTheSandboxSeed: every job's interpreter hashes strings
// with the seed the sandbox's environment names (PYTHONHASHSEED=0), so a
// program that iterates over a set of strings sees the same order in every
// run and container and its verdict can be re-executed; and it is still
// isolated as -I makes it (no user site, no script directory on sys.path)
// and writes no bytecode. Under -I, which ignores the environment, each
// container hashed with a random seed. It also finds what the zygote held
// frozen (gc.freeze), so that the job's collections leave its pages alone.
func TestJobsHashWithTheSandboxSeed(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		launch, _, img := testSandboxOn(t, e)
		d := testDataset(t, "humanevalplus-mini-v0.1.10")
		truth := testTruth(t, d, img)
		probe := `{canon}
import gc, sys
_fib = fib
def fib(n):
    f = sys.flags
    if f.hash_randomization or not (f.no_user_site and f.safe_path and f.dont_write_bytecode) or "/harness" in sys.path:
        raise SystemError("the job's interpreter: %r, sys.path %r" % (f, sys.path))
    if gc.get_freeze_count() == 0:
        raise SystemError("nothing of the zygote is frozen")
    return _fib(n)
`
		probed, hon := runAttackThenHonest(t, launch, d, truth, d.Task(integrityTask), probe)
		for _, pr := range []*PhaseResult{&probed.Base, probed.Plus, &hon.Base, hon.Plus} {
			if pr.Status != StatusPass {
				t.Errorf("status %s (%s), want pass", pr.Status, pr.Reason)
			}
		}
	})
}

// baseFib returns fib of each base input of integrityTask as a Python list.
func baseFib(t *testing.T, tk *task.Task) string {
	var out []string
	for _, in := range tk.Inputs(task.Base) {
		var args []int
		if err := json.Unmarshal(in, &args); err != nil || len(args) != 1 {
			t.Fatalf("input %s of %s is not [n]", in, tk.ID)
		}
		a, b := 0, 1
		for range args[0] {
			a, b = b, a+b
		}
		out = append(out, fmt.Sprint(a))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// runAttackThenHonest runs the self-check, the attacker and the honest
// sample in one run on one supervisor.
func runAttackThenHonest(t *testing.T, launch wire.Launcher, d *task.Dataset, truth *Truth, tk *task.Task, code string) (att, hon *SampleResult) {
	t.Helper()
	fill := func(s string) string {
		s = strings.ReplaceAll(s, "{canon}", tk.Program())
		s = strings.ReplaceAll(s, "{outputs}", baseFib(t, tk))
		return strings.ReplaceAll(s, "{n}", fmt.Sprint(len(tk.Inputs(task.Base))))
	}
	samples := []*task.Sample{
		{TaskID: tk.ID, ID: 0, Solution: fill(code), Origin: "attacker"},
		{TaskID: tk.ID, ID: 1, Solution: fill(honestAfter), Origin: "honest"},
	}
	// Tighter time limits than the defaults keep the suite short; they are
	// CPU seconds, so a loaded machine does not make them flaky. The load
	// allowance, which ends at the load mark, holds the honest sample's
	// checks and 100 MiB (0.8-1.5 CPU-s under runsc).
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 3
	rep, err := RunStages(context.Background(), StagesConfig{
		Dataset: d, Tasks: []*task.Task{tk}, Samples: samples, Launch: launch, Truth: truth,
		Limits: limits, Parallel: 1,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !rep.SelfCheck.OK() {
		t.Fatalf("self-check: %+v", rep.SelfCheck)
	}
	if rep.SelfCheck.Stats.Supervisors != 1 || rep.Scoring.Supervisors != 1 {
		t.Fatalf("want one supervisor at a time, got %d and %d", rep.SelfCheck.Stats.Supervisors, rep.Scoring.Supervisors)
	}
	return rep.Results[0], rep.Results[1]
}

// harnessControls are the supervisor's controls, each with the edit of
// supervisor.py that takes it out (for TestHarnessControlsAreNeeded only)
// and the integrity case that must then fail.
var harnessControls = []struct {
	control, test string
	edits         [][2]string     // old, new
	runtime       sandbox.Runtime // the runtime where the case shows the control ("" the default)
	host          *bool           // a control of the host's, turned off for the row
}{
	// Under runc the supervisor's clock is the container's cgroup too;
	// under runsc it sums /proc, and the host's clock is what stops the job.
	// (Input 0's own 1 s limit from the load mark now stops the case
	// that hides its work in input 0's call alone: the forks a /proc
	// clock sees pass it; the case that hides a little in every input
	// stays under each input's limit by that clock.)
	{control: "host's job clock", test: "CPU in workers nobody waits for, a little in every input", runtime: sandbox.Runsc, host: &wire.HostClockOn},
	// The sweep of round 2 passed over processes in state Z; the process
	// table after the job is what shows one that still runs.
	{control: "process table after each job", test: "a process whose first thread exited, left for the next job", edits: [][2]string{
		{"            if st[0] == b\"Z\":\n", "            if st[0] == b\"Z\":\n                continue\n"},
		{"    elif clean:\n", "    elif False:\n"},
	}},
	{control: "clean zygote", test: "memory scan for any record of an earlier job", edits: [][2]string{
		{"    zyg = Zygote()\n", "    zyg = LocalZygote()\n"},
		// Without a zygote the container holds three processes, not four.
		{"    if len(BASELINE) != 4 or not {1, os.getpid(), zyg.pid} <= BASELINE:\n", "    if False:\n"},
		{"\n\n# The inode of the initial PID namespace", `

class LocalZygote:
    """Children forked from the supervisor itself."""

    pid = -1

    def cpu(self):
        return 0.0

    def fork(self, fds):
        self.child = os.fork()
        if self.child == 0:
            try:
                child(*fds)
            finally:
                os._exit(8)
        return self.child, None

    def reap(self):
        _, status, usage = os.wait4(self.child, 0)
        return status, usage.ru_maxrss


# The inode of the initial PID namespace`},
	}},
	// The supervisor's whole-job clock and the host's clock both stop this
	// case (under runc both read the container's cgroup): the row takes
	// out both, and the row above shows the host's clock alone.
	{control: "CPU time of the whole job", test: "CPU work in grandchildren while the child waits at nice 19", host: &wire.HostClockOn, edits: [][2]string{
		{"        now = time.monotonic()\n        c = self.clock()\n", "        now = time.monotonic()\n        c = child_cpu(self.ch.pid)\n"},
		{"                c = self.clock()\n", "                c = child_cpu(self.ch.pid)\n"},
		{"        c = self.clock()\n", "        c = child_cpu(self.ch.pid)\n"},
		{"\n\n# The inode of the initial PID namespace", `

def child_cpu(pid):
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        return 0.0


# The inode of the initial PID namespace`},
	}},
	// The row that took the input windows out ("inputs released a window
	// at a time") is out: since input 0 waits for the load mark and the
	// host bounds a job by its own limits, the held-back case still fails
	// without the windows, so the row no longer shows that control alone.
	{control: "no result before its input's release", test: "a result for an input not yet released, sent with the one before", edits: [][2]string{
		{"        if self.buf:\n", "        if False:\n"},
	}},
	{control: "stopped zygote fails the job", test: "stop the zygote", edits: [][2]string{
		{"        if st is None or st[0] not in (b\"S\", b\"R\", b\"D\") or pending:\n            return None\n", ""},
	}},
}

// TestHarnessControlsAreNeeded takes one control at a time out of the
// supervisor and requires the named integrity case to notice.
func TestHarnessControlsAreNeeded(t *testing.T) {
	e0 := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e0)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	task := d.Task(integrityTask)
	pinned := wire.HarnessDigest
	t.Cleanup(func() { wire.HarnessDigest = pinned })
	for _, m := range harnessControls {
		t.Run(strings.ReplaceAll(m.control, " ", "_"), func(t *testing.T) {
			e := controlRow(t, e0, m.runtime, m.host)
			launch := editedHarness(t, e, img, m.edits)
			idx := slices.IndexFunc(integrityCases(), func(c integrityCase) bool { return c.name == m.test })
			if idx < 0 {
				t.Fatalf("no integrity case %q", m.test)
			}
			c := integrityCases()[idx]
			att, hon := runAttackThenHonest(t, launch, d, testTruth(t, d, img), task, c.code)
			var broke []string
			for _, pr := range []*PhaseResult{&att.Base, att.Plus} {
				t.Logf("attacker: %s (%s)", pr.Status, pr.Reason)
				if !slices.Contains(c.want, pr.Status) {
					broke = append(broke, "attacker "+string(pr.Status))
				}
			}
			for _, pr := range []*PhaseResult{&hon.Base, hon.Plus} {
				t.Logf("honest: %s (%s)", pr.Status, pr.Reason)
				if pr.Status != StatusPass {
					broke = append(broke, "honest "+string(pr.Status))
				}
			}
			if len(broke) == 0 {
				t.Fatalf("with %s removed, integrity case %q still passes: the suite does not test that control", m.control, m.test)
			}
			t.Logf("with %s removed, %q fails as it must: %v", m.control, m.test, broke)
		})
	}
}

// stopPendingCheck loads supervisor.py on the host's python3 and asks its
// stop_pending about a child that blocks SIGTSTP: before and after a
// SIGTSTP is queued to it, and about one with SIGUSR1 queued instead.
const stopPendingCheck = `
import importlib.util, json, os, signal, sys, time
spec = importlib.util.spec_from_file_location("supervisor", sys.argv[1] + "/supervisor.py")
sup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sup)
def child():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTSTP, signal.SIGUSR1})
        os.write(w, b"x")
        time.sleep(60)
        os._exit(0)
    os.read(r, 1)
    return pid
out = {}
a = child()
out["none"] = sup.stop_pending(a)
os.kill(a, signal.SIGTSTP)
out["tstp"] = sup.stop_pending(a)
b = child()
os.kill(b, signal.SIGUSR1)
out["usr1"] = sup.stop_pending(b)
out["gone"] = sup.stop_pending(1 << 22)
for p in (a, b):
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
print(json.dumps(out))
`

// TestStopPendingSeesAQueuedStop: the zygote check after a job sees a stop
// signal that was queued but not yet acted on (which the SIGCONT after it
// would discard unseen): on a loaded host, "stop the zygote" once passed
// that way.
func TestStopPendingSeesAQueuedStop(t *testing.T) {
	harness, err := wire.WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "-c", stopPendingCheck, harness).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got map[string]bool
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python3 printed %q: %v", out, err)
	}
	want := map[string]bool{"none": false, "tstp": true, "usr1": false, "gone": false}
	if !maps.Equal(got, want) {
		t.Fatalf("stop_pending: %v, want %v", got, want)
	}
}

package codebench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// The integrity suite's cases about the CPU clocks: no program gets more
// CPU time than its limits give it, by any clock, and a results file shows
// that every pass was within them. Each case runs as the suite's do (the
// self-check, the attacker, an honest sample, on one supervisor), with the
// run limits it names.

// clockCase is an integrity case with the run limits it needs: by default
// the suite's (runAttackThenHonest's: 1 s per input, a 3 s load
// allowance, which the honest sample's loading needs under runsc).
type clockCase struct {
	integrityCase
	// limits changes the suite's limits (runAttackThenHonest's); nil for
	// none.
	limits func(*RunLimits)
	// baseOnly scores the base inputs alone (a short list, whose limit a
	// large allowance would dwarf).
	baseOnly bool
}

// hiddenWorkers workers of hiddenWorker CPU seconds each, while the
// program loads: the CPU the case "CPU hidden from the supervisor past the
// list's limit" hides, 16.7 s in all.
const (
	hiddenWorkers = 100
	hiddenWorker  = 16.7 / hiddenWorkers
)

// burn is Python that spends CPU seconds in this process.
var burn = attack("clock/parts/burn.py")

func clockCases() []clockCase {
	return []clockCase{
		// EvalPlus's per-input alarm fails a call over its limit, input
		// 0's too; so does repro for every later input. Input 0's call
		// once ran under the load allowance as well (twice its limit here).
		{integrityCase: integrityCase{"1.5 CPU-s in input 0's call, against its limit of 1 s", burn + attack("clock/input-0-over-its-limit.py"), []Status{StatusFail}}},
		// The program takes input 0 while it loads, works on it under the
		// load allowance, then sends the load mark itself and the rest of
		// the work under input 0's own limit: 1.5 CPU-s on input 0 in all.
		// With no input before the load mark, it waits for an input that
		// never comes until its loading is idle too long.
		{integrityCase: integrityCase{"input 0's work done while loading, then the load mark", burn + attack("clock/input-0-work-while-loading.py"), []Status{StatusTimeout, StatusFail}}},
		// Under runsc the supervisor's clock misses workers nobody waits
		// for; the host's clock of the container must then hold the job to
		// its own limit: the list's 6.04 s, loading included, plus the
		// stated slack (7.14 s), not the 30 s load allowance on top of the
		// inputs' 5.04 s (39.04 s with the slack).
		//
		// As for the loading case below, the work is an empty loop the
		// host sized in its own CPU time, aimed at the window's geometric
		// middle (16.7 s, 2.34× from both ends), in workers of 0.17 s.
		// (Workers that stopped by gVisor's clock, 7.6 s of it against a
		// budget of 7.14 s, used 7.0 s by the host's on a busy machine, and
		// passed.) The loop runs at module level, as the host timed it: in
		// a function it ran 1.4 to 1.6 times as fast.
		//
		// The work is done while the program loads, where no per-input
		// limit runs and the supervisor holds the loading and the list
		// only at eight times their value under gVisor: with the control
		// taken out, nothing but the control decides the case, however
		// loaded the host. (Spread over the five calls, each call's own
		// 1 s held workers and the caller's forks, about 8 ms of CPU each
		// under gVisor, to a margin of 3×; a busy machine, where gVisor's
		// clock counted the waits, once stopped input 4 that way.)
		{integrityCase: integrityCase{"CPU hidden from the supervisor past the list's limit", strings.NewReplacer("{loops}", fmt.Sprint(loopFor(hiddenWorker)), "{workers}", fmt.Sprint(hiddenWorkers)).Replace(attack("clock/cpu-hidden-past-list-limit.py")), []Status{StatusTimeout, StatusFail}}, limits: func(l *RunLimits) { l.ImportAllowance = 30 }, baseOnly: true},
		// Loading past the load allowance (3 s here) by real CPU work: a
		// loop whose length the host measured in its own CPU time, so
		// that no clock inside the sandbox decides how much work it is.
		// Under gVisor the host's clock of the loading stops it (the
		// supervisor's clock counts a loaded host's waits, and applies the
		// allowance only as a backstop); under runc both clocks do. Within
		// the list's limit, it would pass if nothing held the loading.
		//
		// The case discriminates only if the loop's CPU time lies between
		// the host's load budget (3 s + 0.8 s of slack) and the list's
		// (4 s on each of the 5 base inputs, 21 s with the load, plus
		// 2.6 s of slack: 23.6 s). An empty loop's CPU time per iteration
		// varies by 1.5× and more between the host's measurement and the
		// job on a shared machine (the sibling hyperthread's work, the
		// clock frequency), so the loop aims at the window's geometric
		// middle, 9.5 s, 2.5× from both ends. (At 4.5 s against a list of
		// 6 s, 1.2× above the load budget, a busy machine once ran it in
		// 3.2 s, which passed rightly; at 7 s against 12.6 s, in 4.5 s.)
		{integrityCase: integrityCase{"9.5 CPU-s of loading, against an allowance of 3 s", burn + strings.ReplaceAll(attack("clock/loading-over-allowance.py"), "{loops}",
			fmt.Sprint(loopFor(9.5))), []Status{StatusTimeout}}, baseOnly: true, limits: func(l *RunLimits) { l.MinTimeLimit = 4 }},
	}
}

// loopRate is how many iterations of an empty Python for loop this host
// runs per CPU second, measured with the host's /usr/bin/python3 (the
// evaluator image's Python is the same Debian package): the median of
// three measurements, so that one taken while a sibling hyperthread was
// busy does not size the loop alone.
var loopRate = sync.OnceValue(func() float64 {
	out, err := exec.Command("/usr/bin/python3", "-c", `
import time
n = 10_000_000
rates = []
for _ in range(3):
    t = time.process_time()
    for _ in range(n):
        pass
    rates.append(n / (time.process_time() - t))
print(sorted(rates)[1])
`).Output()
	if err != nil {
		panic(fmt.Sprintf("python3 for the loop rate: %v", err))
	}
	r, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || r <= 0 {
		panic(fmt.Sprintf("python3 printed %q for the loop rate", out))
	}
	return r
})

// loopFor is the iterations of an empty Python loop that take seconds of
// CPU time on this host.
func loopFor(seconds float64) int {
	return int(seconds * loopRate())
}

// TestClockIntegritySuite runs the clock cases under each runtime, and
// checks that the honest sample's verdicts name their run and clocks and
// lie within their limits by each.
func TestClockIntegritySuite(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		launch, _, img := testSandboxOn(t, e)
		d := testDataset(t, "humanevalplus-mini-v0.1.10")
		truth := testTruth(t, d, img)
		for _, c := range clockCases() {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				for _, b := range runClockCase(t, launch, d, truth, c) {
					t.Error(b)
				}
			})
		}
	})
}

// runClockCase runs c and returns what broke: the attacker's verdict not
// among c.want, the honest sample not passing, or its clocks missing or
// over a limit.
func runClockCase(t *testing.T, launch wire.Launcher, d *task.Dataset, truth *Truth, c clockCase) (broke []string) {
	t.Helper()
	tk := d.Task(integrityTask)
	samples := []*task.Sample{
		{TaskID: tk.ID, ID: 0, Solution: c.code, Origin: "attacker"},
		{TaskID: tk.ID, ID: 1, Solution: strings.ReplaceAll(honestAfter, "{canon}", tk.Program()), Origin: "honest"},
	}
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 3
	if c.limits != nil {
		c.limits(&limits)
	}
	rep, err := RunStages(context.Background(), StagesConfig{
		Dataset: d, Tasks: []*task.Task{tk}, Samples: samples, Launch: launch, Truth: truth,
		Limits: limits, Parallel: 1, BaseOnly: c.baseOnly,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !rep.SelfCheck.OK() {
		t.Fatalf("self-check: %+v", rep.SelfCheck)
	}
	att, hon := rep.Results[0], rep.Results[1]
	phases := func(r *SampleResult) []*PhaseResult {
		if r.Plus == nil {
			return []*PhaseResult{&r.Base}
		}
		return []*PhaseResult{&r.Base, r.Plus}
	}
	for _, pr := range phases(att) {
		t.Logf("attacker: %s (%s) %+v", pr.Status, pr.Reason, pr.Clocks)
		if !slices.Contains(c.want, pr.Status) {
			broke = append(broke, fmt.Sprintf("attacker: status %s (%s), want one of %v", pr.Status, pr.Reason, c.want))
		}
	}
	for _, pr := range phases(hon) {
		t.Logf("honest: %s (%s) %+v", pr.Status, pr.Reason, pr.Clocks)
		if pr.Status != StatusPass {
			broke = append(broke, fmt.Sprintf("honest sample after the attacker: status %s (%s), want pass", pr.Status, pr.Reason))
			continue
		}
		if why := honestClocks(pr, wire.HostClockOn); why != "" {
			broke = append(broke, "honest sample's clocks: "+why)
		}
	}
	return broke
}

// honestClocks checks a pass's clocks: the deciding run named, its CPU
// time on the job clock and the container's within their limits, loading
// part of it, and the wall time measured apart.
func honestClocks(pr *PhaseResult, host bool) string {
	c := pr.Clocks
	switch {
	case c == nil:
		return "none recorded"
	case c.Run != RunFirst && c.Run != RunExact && c.Run != RunRecheck && c.Run != RunRecheckExact:
		return fmt.Sprintf("run %q", c.Run)
	case !(c.JobCPU > 0 && c.JobCPU <= c.CPULimit && c.CPULimit == pr.Limit):
		return fmt.Sprintf("job CPU %.3f s against a limit of %.3f s (the phase's is %.3f s)", c.JobCPU, c.CPULimit, pr.Limit)
	case !(c.LoadCPU >= 0 && c.LoadCPU <= c.JobCPU):
		return fmt.Sprintf("load CPU %.3f s of a job's %.3f s", c.LoadCPU, c.JobCPU)
	case host && !(c.ContainerCPU > 0 && c.ContainerCPU <= c.ContainerBudget):
		return fmt.Sprintf("container CPU %.3f s against a budget of %.3f s", c.ContainerCPU, c.ContainerBudget)
	case !(c.Wall > 0) || c.Wall != pr.Elapsed:
		return fmt.Sprintf("wall %.3f s (elapsed %.3f s)", c.Wall, pr.Elapsed)
	}
	return ""
}

// clockControls are the controls behind the clock cases, each with what
// takes it out (an edit of supervisor.py, or a switch of the host's) and
// the case that must then fail.
var clockControls = []struct {
	control, test string
	edits         [][2]string
	runtime       sandbox.Runtime
	host          *bool
	// scaled sets wire.ForceClockScale: the supervisor applies its load and
	// list limits as it does under gVisor.
	scaled bool
}{
	// Input 0's clock from the L record, with the load allowance on top
	// of its limit. The host's tally of each record against its input's
	// own limit then still refuses the pass (settlePass), but as a timeout,
	// where EvalPlus's per-input alarm fails the call: the case notices.
	{control: "the load allowance ends at the load mark", test: "1.5 CPU-s in input 0's call, against its limit of 1 s", edits: [][2]string{
		{"            self.cpu_limit = self.cpu_cap = self.limits[0]\n", "            self.cpu_limit += self.limits[0]\n            self.cpu_cap += self.limits[0]\n"},
		{"            self.cpu_last = c\n", "            pass\n"},
	}},
	// Input 0 in the child's pipe from the start, as before the load mark
	// ended the allowance.
	{control: "no input before the load mark", test: "input 0's work done while loading, then the load mark", edits: [][2]string{
		{"        self.cancels = 0\n        self.push()\n", "        self.cancels = 0\n        if self.n:\n            self.release(1)\n        # (No input is released before the load mark: taken out.)\n        self.push()\n"},
	}},
	// Under runc the supervisor's clock is the container's cgroup too.
	{control: "host's clock bounded by the job's own limits", test: "CPU hidden from the supervisor past the list's limit", runtime: sandbox.Runsc, host: &wire.HostBudgetOwnLimits},
	// Under gVisor the supervisor applies the load allowance only eight
	// times over (package wire's clockScale): the host's clock of the
	// loading holds it.
	// The row scales the limits under runc, whose job clock is the
	// cgroup's, so that a loaded machine does not change what it shows.
	{control: "the host's clock of the loading", test: "9.5 CPU-s of loading, against an allowance of 3 s", host: &wire.HostLoadClockOn, scaled: true},
}

// TestClockControlsAreNeeded takes one clock control out at a time and
// requires its case to notice.
func TestClockControlsAreNeeded(t *testing.T) {
	e0 := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e0)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	pinned := wire.HarnessDigest
	t.Cleanup(func() { wire.HarnessDigest = pinned })
	for _, m := range clockControls {
		t.Run(strings.ReplaceAll(m.control, " ", "_"), func(t *testing.T) {
			e := controlRow(t, e0, m.runtime, m.host)
			if m.scaled {
				wire.ForceClockScale = true
				t.Cleanup(func() { wire.ForceClockScale = false })
			}
			idx := slices.IndexFunc(clockCases(), func(c clockCase) bool { return c.name == m.test })
			if idx < 0 {
				t.Fatalf("no clock case %q", m.test)
			}
			launch := editedHarness(t, e, img, m.edits)
			broke := runClockCase(t, launch, d, testTruth(t, d, img), clockCases()[idx])
			if len(broke) == 0 {
				t.Fatalf("with %s removed, clock case %q still passes: the suite does not test that control", m.control, m.test)
			}
			t.Logf("with %s removed, %q fails as it must: %v", m.control, m.test, broke)
		})
	}
}

// editedHarness writes the harness with edits applied to supervisor.py
// (editedHarnessDir), pins its digest for the test and returns a launcher
// of it on e.
func editedHarness(t *testing.T, e *sandbox.Engine, img sandbox.Image, edits [][2]string) wire.Launcher {
	t.Helper()
	return wire.SandboxLauncher(e, img, editedHarnessDir(t, "supervisor.py", edits), wire.SupervisorLimits())
}

// applyEdits applies edits to code in order; each old text must be there
// once when its turn comes.
func applyEdits(code string, edits [][2]string) (string, error) {
	for _, ed := range edits {
		if n := strings.Count(code, ed[0]); n != 1 {
			return "", fmt.Errorf("%d times %q, not once: update the edit", n, ed[0])
		}
		code = strings.Replace(code, ed[0], ed[1], 1)
	}
	return code, nil
}

// TestControlEditsApply: every control table's edits still apply to the
// harness as it is, checked in a moment rather than where each row's
// sandbox run reaches it.
func TestControlEditsApply(t *testing.T) {
	type row struct {
		name, file string
		edits      [][2]string
	}
	var rows []row
	for _, m := range harnessControls {
		rows = append(rows, row{m.control, "supervisor.py", m.edits})
	}
	for _, m := range clockControls {
		rows = append(rows, row{m.control, "supervisor.py", m.edits})
	}
	for _, m := range stateControls {
		rows = append(rows, row{m.control, "supervisor.py", m.edits})
	}
	for _, m := range evalplusControls {
		rows = append(rows, row{m.control, m.file, m.edits})
	}
	for _, m := range jobControlRows() {
		rows = append(rows, row{m.control, "supervisor.py", m.edits})
	}
	for _, r := range rows {
		src, err := fs.ReadFile(wire.HarnessTree(), r.file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := applyEdits(string(src), r.edits); err != nil {
			t.Errorf("control %q, %s: %v", r.name, r.file, err)
		}
	}
}

// editedHarnessDir writes the embedded harness into a new folder with
// edits applied to its file file (each old text must be there once), pins
// the folder's digest as wire.HarnessDigest for the test (the caller
// restores the pin) and returns the folder.
func editedHarnessDir(t testing.TB, file string, edits [][2]string) string {
	t.Helper()
	src, err := fs.ReadFile(wire.HarnessTree(), file)
	if err != nil {
		t.Fatal(err)
	}
	code, err := applyEdits(string(src), edits)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	dir := filepath.Join(t.TempDir(), "harness")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(wire.HarnessTree(), ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := fs.ReadFile(wire.HarnessTree(), p)
		if p == file {
			b = []byte(code)
		}
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := digest.Tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	wire.HarnessDigest = tree.Digest()
	return dir
}

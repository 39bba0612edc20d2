package codebench

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/testenv"
)

// The integrity suite of --engine evalplus: a sample scored by EvalPlus's
// own code may decide its own verdict the way EvalPlus lets it, but no
// other sample's. Each case is one base-only run of HumanEval/53 (add) with
// one container at a time: the self-check, then the attacker, then the
// canonical solution (which must pass) and a wrong solution (which must
// fail). Both later samples sleep 0.1 s as they load, as a slow import
// would: the attacks below then find their processes every time, so that a
// run without the controls fails for certain, not by a race.

// evalplusAttackHelpers are shared by the attackers. sampleProcs lists the
// processes an EvalPlus driver forked to run a sample, but skip and their
// children: those under EvalPlus's guard (its stack limit of GiBs) whose
// parent is not init and whose session is not the caller's (the attackers'
// own detached processes are init's, each in a session of its own); detach
// runs fn in a process of its own, in a new session, made with posix.fork
// (EvalPlus's guard takes os.fork and os.kill, not posix's), with no
// inherited descriptor, until the given monotonic time, and returns once
// that process runs.
var evalplusAttackHelpers = attack("evalplus/parts/helpers.py")

// evalplusLater is what the later samples hold before their add: 0.1 s of
// loading.
var evalplusLater = attack("evalplus/parts/slow-load.py")

type evalplusAttack struct {
	name string
	code string
	// ownFail: the attacker's own verdict must be fail; the attacker
	// passes only where its attack worked.
	ownFail bool
	// outlived: the attacker's job must have left processes behind, which
	// the supervisor killed after its driver ended (the process-table path
	// of the job ran).
	outlived bool
}

func evalplusAttacks() []evalplusAttack {
	return []evalplusAttack{
		// EvalPlus's driver reports through shared memory (stat, progress,
		// details) that it allocates again, at the same offsets, for each
		// sample. A process left by the attacker stops the driver as soon as
		// it forks a later sample, waits for that sample to end, writes
		// "pass, every input true" where the sample's results lie, and lets
		// the driver go on to read them.
		{name: "a posix.fork survivor that writes later samples' results", outlived: true, code: evalplusAttackHelpers + attack("evalplus/survivor-writes-later-results.py")},
		// The driver holds the expected outputs of the task; the attacker,
		// forked from it, finds their list at the same address in its own
		// memory and, through /proc/<driver>/mem, points every item of the
		// driver's list at -1: later samples are then compared with -1. It
		// returns the right sums only where the write went through, so its
		// own fail shows the write refused.
		{name: "a write of the expected outputs through /proc/<driver>/mem", ownFail: true, code: attack("evalplus/write-expected-through-driver-mem.py")},
		// Processes that run on after the attacker: two spin on the CPU and
		// one stops every process a driver forks for a later sample, which
		// then overruns EvalPlus's wall-clock limits.
		{name: "forked hogs that stop and slow later samples", outlived: true, code: evalplusAttackHelpers + attack("evalplus/hogs-stop-later-samples.py")},
	}
}

// TestEvalPlusIntegrity runs every attack on --engine evalplus under each
// runtime.
func TestEvalPlusIntegrity(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		img := sandboxtest.Image(t, e)
		harness, err := wire.WriteHarness(filepath.Join(t.TempDir(), "harness"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range evalplusAttacks() {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				if broke := runEvalPlusAttack(t, e, img, harness, tree, c); len(broke) > 0 {
					t.Errorf("%s", strings.Join(broke, "; "))
				}
			})
		}
	})
}

// runEvalPlusAttack runs one case and returns what went wrong.
func runEvalPlusAttack(t *testing.T, e *sandbox.Engine, img sandbox.Image, harness, tree string, c evalplusAttack) []string {
	t.Helper()
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	tk := d.Task("HumanEval/53")
	m, err := digest.Tree(filepath.Join(tree, EvalPlusPackage))
	if err != nil {
		t.Fatal(err)
	}
	samples := []*task.Sample{
		{TaskID: tk.ID, ID: 0, Solution: c.code, Origin: "attacker"},
		{TaskID: tk.ID, ID: 1, Solution: evalplusLater + tk.Program(), Origin: "canonical"},
		{TaskID: tk.ID, ID: 2, Solution: evalplusLater + "def add(x, y):\n    return -1\n", Origin: "wrong"},
	}
	rep, err := RunEvalPlus(context.Background(), EvalPlusConfig{Engine: e, Image: img, HarnessDir: harness,
		TreeDir: tree, TreeDigest: m.Digest(), DatasetFile: decompressed(t, miniPin, d), Dataset: d,
		Tasks: []*task.Task{tk}, Samples: samples, BaseOnly: true, Parallel: 1, Limits: DefaultRunLimits()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := byID(rep.Results)
	for i, r := range res {
		t.Logf("%s: %s (%s)", samples[i].Origin, r.Base.Status, r.Base.Reason)
	}
	var broke []string
	if r := res[1]; r.Base.Status != StatusPass {
		broke = append(broke, "the canonical solution after the attacker: "+string(r.Base.Status))
	}
	if r := res[2]; r.Base.Status == StatusPass {
		broke = append(broke, "the wrong solution after the attacker passed")
	}
	if att := res[0]; c.ownFail && att.Base.Status != StatusFail {
		broke = append(broke, "the attacker's own verdict is "+string(att.Base.Status)+": its attack worked")
	}
	if c.outlived {
		if rep.Scoring.Outlived < 1 || !strings.Contains(res[0].Base.Reason, "outlived") {
			broke = append(broke, "no process of the attacker outlived its driver to be killed: the case did not run its attack")
		}
	}
	return broke
}

// evalplusControls are the controls of --engine evalplus, each with the
// edits of a harness file that take it out and the case that must then
// fail (under runc, where both show).
var evalplusControls = []struct {
	control, test, file string
	edits               [][2]string // old, new
}{
	{control: "non-dumpable driver", test: "a write of the expected outputs through /proc/<driver>/mem", file: "evalplus_driver.py", edits: [][2]string{
		// (The driver inherits the zygote's non-dumpable flag too: the row
		// makes it dumpable.)
		{"    set_nondumpable()\n    os.register_at_fork", "    import ctypes\n    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n    os.register_at_fork"},
	}},
	{control: "sweep and process table after an EvalPlus job", test: "forked hogs that stop and slow later samples", file: "supervisor.py", edits: [][2]string{
		// (stop_job, shared by every job kind.)
		{"    clean = sweep(ch.skip)\n", "    clean = True\n"},
		{"    elif clean:\n", "    elif False:\n"},
	}},
}

// controlTries is how many runs of a timing-dependent attack a control
// test makes before it concludes that the control is not needed.
const controlTries = 3

// TestEvalPlusControlsAreNeeded takes one control at a time out of the
// harness and requires the named case to notice.
func TestEvalPlusControlsAreNeeded(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	pinned := wire.HarnessDigest
	t.Cleanup(func() { wire.HarnessDigest = pinned })
	for _, m := range evalplusControls {
		t.Run(strings.ReplaceAll(m.control, " ", "_"), func(t *testing.T) {
			dir := editedHarnessDir(t, m.file, m.edits)
			idx := slices.IndexFunc(evalplusAttacks(), func(c evalplusAttack) bool { return c.name == m.test })
			if idx < 0 {
				t.Fatalf("no case %q", m.test)
			}
			// The attacks race the driver (a stopper must find a later
			// sample's process while it runs), so a loaded machine can make
			// one run miss: the control is needed if any of controlTries
			// runs breaks. With the control in, TestEvalPlusIntegrity
			// requires every run to hold.
			var broke []string
			for try := 1; try <= controlTries && len(broke) == 0; try++ {
				if broke = runEvalPlusAttack(t, e, img, dir, tree, evalplusAttacks()[idx]); len(broke) == 0 {
					t.Logf("try %d of %d: with the %s removed, %q held", try, controlTries, m.control, m.test)
				}
			}
			if len(broke) == 0 {
				t.Fatalf("with the %s removed, %q still passes in %d runs: the suite does not test that control", m.control, m.test, controlTries)
			}
			t.Logf("with the %s removed, %q fails as it must: %v", m.control, m.test, broke)
		})
	}
}

// BenchmarkEvalPlusEngine measures --engine evalplus end to end under each
// runtime: the self-check and the scoring of the canonical solutions of
// HumanEval+'s first 20 tasks (base and plus), one container at a time,
// reported per sample scored (40 in all).
func BenchmarkEvalPlusEngine(b *testing.B) {
	tree := testenv.Getenv(b, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	m, err := digest.Tree(filepath.Join(tree, EvalPlusPackage))
	if err != nil {
		b.Fatal(err)
	}
	for _, rt := range []sandbox.Runtime{sandbox.Runc, sandbox.Runsc} {
		b.Run(string(rt), func(b *testing.B) {
			e := sandboxtest.EngineRuntime(b, rt)
			img := sandboxtest.Image(b, e)
			harness, err := wire.WriteHarness(filepath.Join(b.TempDir(), "harness"))
			if err != nil {
				b.Fatal(err)
			}
			d := testDataset(b, "humanevalplus-mini-v0.1.10")
			file := decompressed(b, miniPin, d)
			tasks := d.Tasks[:20]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rep, err := RunEvalPlus(context.Background(), EvalPlusConfig{Engine: e, Image: img, HarnessDir: harness,
					TreeDir: tree, TreeDigest: m.Digest(), DatasetFile: file, Dataset: d, Tasks: tasks,
					Samples: CanonicalSamples(tasks), Parallel: 1, Limits: DefaultRunLimits()})
				if err != nil || rep.Summary.PlusPassed != len(tasks) {
					b.Fatalf("%v %+v", err, rep.Summary)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*2*len(tasks)), "s/sample")
		})
	}
}

// FuzzParseEvalPlusResult: the driver's result, which a sample can write
// into, is read without panic, and only a line with a verdict is taken.
func FuzzParseEvalPlusResult(f *testing.F) {
	f.Add("{\"gt_seconds\": 0.1, \"base_status\": \"pass\", \"base_fail\": -1, \"plus_status\": \"fail\", \"plus_fail\": 3}\n", true)
	f.Add("{\"gt_error\": \"ValueError: x\"}\n", false)
	f.Add("{\"error\": \"missing\", \"modules\": [\"numpy\"]}\n", true)
	f.Add("{\"gt_seconds\": 0.1, \"base_status\": \"pass\"}\n{\"gt_seconds\": 0.1}\n", false)
	f.Add("", true)
	f.Fuzz(func(t *testing.T, s string, plus bool) {
		r, err := parseEvalPlusResult(s, plus)
		if err == nil && r.Error == "" && r.GTError == nil && (r.BaseStatus == "" || (plus && r.PlusStatus == "")) {
			t.Fatalf("%q taken without a verdict: %+v", s, r)
		}
	})
}

// FuzzLineTaskID: a dataset line's task id is read without panic.
func FuzzLineTaskID(f *testing.F) {
	f.Add([]byte(`{"task_id": "Mbpp/2", "atol": Infinity}`))
	f.Add([]byte(`{"prompt": "x", "task_id": "HumanEval/0"}`))
	f.Add([]byte(`{"atol": NaN, "task_id": "Mbpp/3"}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, err := lineTaskID(b); err == nil && id == "" {
			t.Fatalf("%q: an empty task id taken", b)
		}
	})
}

// TestLineTaskIDOfMBPPLine: a line's task id is read though an MBPP+
// line holds Infinity and NaN after it; a line without one is refused.
func TestLineTaskIDOfMBPPLine(t *testing.T) {
	for line, want := range map[string]string{
		`{"task_id": "Mbpp/2", "atol": Infinity, "x": [NaN]}`: "Mbpp/2",
		`{"prompt": "x", "task_id": "HumanEval/0"}`:           "HumanEval/0",
	} {
		if id, err := lineTaskID([]byte(line)); err != nil || id != want {
			t.Errorf("%s: %q %v, want %q", line, id, err, want)
		}
	}
	for _, line := range []string{`{"prompt": "x"}`, `{"task_id": 3}`, `[1]`} {
		if id, err := lineTaskID([]byte(line)); err == nil {
			t.Errorf("%s: task id %q taken", line, id)
		}
	}
}

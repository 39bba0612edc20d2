package codebench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// candidate is one sample of the hostile suite and the verdicts it must
// get: one of want for base (and for plus, unless plus is set apart).
type candidate struct {
	name string
	task string
	// code is the program; "{canon}" is replaced by the task's canonical
	// program, so that a cheat can also be a correct solution plus a trick.
	code string
	want []Status // allowed statuses; a cheat never lists pass
}

func (c candidate) program(d *task.Dataset) string {
	return strings.ReplaceAll(c.code, "{canon}", d.Task(c.task).Program())
}

var (
	onlyPass    = []Status{StatusPass}
	onlyFail    = []Status{StatusFail}
	onlyTimeout = []Status{StatusTimeout}
	failOrTime  = []Status{StatusFail, StatusTimeout}
)

// The tasks used: 0 has_close_elements -> bool, 2 truncate_number -> float,
// 12 longest -> str or None, 53 add -> int, 29 filter_by_prefix -> list.
func hostileCandidates() []candidate {
	return []candidate{
		// Correct programs, which must pass whatever the others do.
		{"correct 0", "HumanEval/0", "{canon}", onlyPass},
		{"correct 2", "HumanEval/2", "{canon}", onlyPass},
		{"correct 12", "HumanEval/12", "{canon}", onlyPass},
		{"correct 53", "HumanEval/53", "{canon}", onlyPass},
		{"correct 29", "HumanEval/29", "{canon}", onlyPass},
		{"correct 53, own words", "HumanEval/53", attack("hostile/correct-53-own-words.py"), onlyPass},
		{"1 for True passes, as in EvalPlus", "HumanEval/0", attack("hostile/int-for-bool.py"), onlyPass},

		// Wrong programs.
		{"off by one", "HumanEval/53", attack("hostile/off-by-one.py"), onlyFail},
		{"wrong type: str for int", "HumanEval/53", attack("hostile/str-for-int.py"), onlyFail},
		{"wrong type: tuple for list", "HumanEval/29", attack("hostile/tuple-for-list.py"), onlyFail},
		{"wrong type: int for float", "HumanEval/2", attack("hostile/int-for-float.py"), onlyFail},
		{"exception", "HumanEval/12", attack("hostile/exception.py"), onlyFail},
		{"syntax error", "HumanEval/12", attack("hostile/syntax-error.py"), onlyFail},
		{"missing entry point", "HumanEval/12", attack("hostile/missing-entry-point.py"), onlyFail},
		{"too slow in input 0's call: EvalPlus's alarm fails it", "HumanEval/53", attack("hostile/slow-first-input.py"), onlyFail},
		{"too slow while loading: a timeout, as under EvalPlus", "HumanEval/53", attack("hostile/slow-loading.py"), onlyTimeout},
		{"a forged load mark, then too slow while loading", "HumanEval/53", attack("hostile/forged-load-mark.py"), onlyFail},
		{"too slow from the second input: EvalPlus's alarm fails it", "HumanEval/53", attack("hostile/slow-second-input.py"), onlyFail},

		// Cheats: never pass.
		{"always-equal object", "HumanEval/53", attack("hostile/always-equal-object.py"), onlyFail},
		{"lying int subclass", "HumanEval/53", attack("hostile/lying-int.py"), onlyFail},
		{"lying str subclass", "HumanEval/12", attack("hostile/lying-str.py"), onlyFail},
		{"lying list subclass", "HumanEval/29", attack("hostile/lying-list.py"), onlyFail},
		{"float subclass close to everything", "HumanEval/2", attack("hostile/lying-float.py"), onlyFail},
		{"dict subclass whose methods show the right answer", "HumanEval/53", attack("hostile/lying-dict.py"), onlyFail},
		{"class posing as a numpy scalar", "HumanEval/53", attack("hostile/fake-numpy-scalar.py"), onlyFail},
		{"iterator that equals everything", "HumanEval/29", attack("hostile/equal-iterator.py"), onlyFail},
		{"sys.exit(0) at import", "HumanEval/53", attack("hostile/sys-exit-at-import.py"), onlyFail},
		{"os._exit(0) at import", "HumanEval/53", attack("hostile/os-exit-at-import.py"), onlyFail},
		{"sys.exit(0) in the function", "HumanEval/53", attack("hostile/sys-exit-in-call.py"), onlyFail},
		{"os._exit(0) in the function", "HumanEval/53", attack("hostile/os-exit-in-call.py"), onlyFail},
		{"raise SystemExit after a correct answer", "HumanEval/53", attack("hostile/system-exit-after-answer.py"), onlyFail},
		{"print forged result records", "HumanEval/0", attack("hostile/print-forged-records.py"), onlyFail},
		{"forge records on the result pipe and exit", "HumanEval/0", attack("hostile/forge-result-pipe.py"), onlyFail},
		{"expected values from the caller's frames", "HumanEval/53", attack("hostile/expected-from-frames.py"), onlyFail},
		{"expected values from gc", "HumanEval/53", attack("hostile/expected-from-gc.py"), onlyFail},
		{"expected values on disk", "HumanEval/53", attack("hostile/expected-on-disk.py"), onlyFail},
		{"expected values in the environment", "HumanEval/53", attack("hostile/expected-in-environment.py"), onlyFail},
		{"read the supervisor's memory", "HumanEval/53", attack("hostile/read-parent-memory.py"), onlyFail},
		{"write a results file", "HumanEval/53", attack("hostile/write-results-file.py"), onlyFail},
		{"monkeypatch json, type, isinstance", "HumanEval/53", attack("hostile/monkeypatch-builtins.py"), onlyFail},
		{"monkeypatch the harness", "HumanEval/53", attack("hostile/monkeypatch-harness.py"), onlyFail},
		{"infinite loop at import", "HumanEval/53", attack("hostile/infinite-loop-at-import.py"), onlyTimeout},
		{"segfault", "HumanEval/53", attack("hostile/segfault.py"), onlyFail},
		{"recursion bomb", "HumanEval/53", attack("hostile/recursion-bomb.py"), failOrTime},
		{"huge output to stdout", "HumanEval/53", attack("hostile/huge-stdout.py"), onlyTimeout},
		{"huge return value", "HumanEval/12", attack("hostile/huge-return.py"), onlyFail},
		{"huge list return value", "HumanEval/29", attack("hostile/huge-list-return.py"), failOrTime},
		{"memory bomb", "HumanEval/53", attack("hostile/memory-bomb.py"), onlyFail},
		{"fork bomb", "HumanEval/53", attack("hostile/fork-bomb.py"), failOrTime},
		{"CPU bomb with threads", "HumanEval/53", attack("hostile/thread-cpu-bomb.py"), failOrTime},
		{"fill /tmp and leave a process behind", "HumanEval/53", attack("hostile/fill-tmp-and-linger.py"), onlyFail},
		{"kill the parent (the zygote)", "HumanEval/53", attack("hostile/kill-parent.py"), onlyFail},
		{"stop the parent (the zygote)", "HumanEval/53", attack("hostile/stop-parent.py"), failOrTime},
		{"sleep", "HumanEval/53", attack("hostile/sleep.py"), onlyFail},
		{"kill everything it may", "HumanEval/53", attack("hostile/kill-everything.py"), onlyFail},
	}
}

// TestHostileSuite runs every hostile candidate under each runtime.
func TestHostileSuite(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) { testHostileSuite(t, e) })
}

func testHostileSuite(t *testing.T, e *sandbox.Engine) {
	launch, _, img := testSandboxOn(t, e)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	truth := testTruth(t, d, img)
	cands := hostileCandidates()
	var samples []*task.Sample
	taskSet := map[string]bool{}
	for i, c := range cands {
		samples = append(samples, &task.Sample{TaskID: c.task, ID: i, Solution: c.program(d), Origin: c.name})
		taskSet[c.task] = true
	}
	var tasks []*task.Task
	for _, tk := range d.Tasks {
		if taskSet[tk.ID] {
			tasks = append(tasks, tk)
		}
	}
	// Tighter time limits than the defaults keep the suite short; they are
	// CPU seconds, so a loaded machine does not make them flaky (under
	// runsc the host's clock of the container decides the load allowance
	// and the list's limit, since gVisor's clock counts a loaded host's
	// waits). The load allowance, which ends at the load mark, holds the
	// memory bomb's 448 MiB before its MemoryError.
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 6
	start := time.Now()
	rep, err := RunStages(context.Background(), StagesConfig{
		Dataset: d, Tasks: tasks, Samples: samples, Launch: launch, Truth: truth,
		Limits: limits, Parallel: 2,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("%d samples in %v", len(samples), time.Since(start))
	if !rep.SelfCheck.OK() {
		t.Fatalf("self-check: %+v", rep.SelfCheck)
	}
	for i, r := range rep.Results {
		c := cands[i]
		for _, pr := range []*PhaseResult{&r.Base, r.Plus} {
			ok := false
			for _, w := range c.want {
				ok = ok || pr.Status == w
			}
			if !ok {
				t.Errorf("%s: status %s (%s), want one of %v", c.name, pr.Status, pr.Reason, c.want)
			} else {
				t.Logf("%s: %s (%s)", c.name, pr.Status, pr.Reason)
			}
		}
	}
}

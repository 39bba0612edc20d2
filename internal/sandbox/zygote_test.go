package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// poisonZygote lowers the limits and priority of its parent, the zygote of
// repro's HumanEval supervisor, then answers correctly.
const poisonZygote = `import os, resource
try:
    resource.prlimit(os.getppid(), resource.RLIMIT_DATA, (80 << 20, 80 << 20))
    os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)
except OSError:
    pass
`

// honestAfterPoison needs a fresh job's priority and 100 MiB.
const honestAfterPoison = `
import os
assert os.getpriority(os.PRIO_PROCESS, 0) == 10, "priority %d" % os.getpriority(os.PRIO_PROCESS, 0)
_big = bytearray(100 << 20)
del _big
`

// TestZygoteStopsWhenPoisoned is the defence behind the seccomp rule that
// keeps prlimit and setpriority on the caller: with that rule taken out,
// a sample does change the zygote's limits and priority, and the zygote's
// check of its own state before each fork must still keep the next honest
// sample passing (the job after the poison gets a fresh container). With
// the check taken out of supervisor.py too, the honest sample must fail:
// the poison works, and the check is what stops it.
func TestZygoteStopsWhenPoisoned(t *testing.T) {
	e0 := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e0)
	d := miniDataset(t)
	tk := d.Task("HumanEval/55")
	pinned := wire.HarnessDigest
	t.Cleanup(func() { wire.HarnessDigest = pinned })
	for _, check := range []bool{true, false} {
		e := sandboxtest.Engine(t)
		sandbox.RemoveControl(e, "seccomp caller-only arguments")
		dir, err := wire.WriteHarness(filepath.Join(t.TempDir(), "harness"))
		if err != nil {
			t.Fatal(err)
		}
		if !check {
			dir = withoutZygoteCheck(t, dir)
		}
		truth, err := codebench.OpenTruth(t.TempDir(), codebench.TruthKey{Dataset: d.ID, DatasetSHA256: d.SHA256, Image: img.ID, Harness: wire.HarnessDigest, CPU: "test"})
		if err != nil {
			t.Fatal(err)
		}
		samples := []*task.Sample{
			{TaskID: tk.ID, ID: 0, Solution: poisonZygote + tk.Program(), Origin: "poison"},
			{TaskID: tk.ID, ID: 1, Solution: tk.Program() + honestAfterPoison, Origin: "honest"},
		}
		limits := codebench.DefaultRunLimits()
		limits.MinTimeLimit, limits.ImportAllowance = 1, 1
		rep, err := codebench.RunStages(context.Background(), codebench.StagesConfig{
			Dataset: d, Tasks: []*task.Task{tk}, Samples: samples, Truth: truth, Limits: limits, Parallel: 1,
			Launch: wire.SandboxLauncher(e, img, dir, wire.SupervisorLimits()),
		})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		honest := rep.Results[1]
		for i, r := range rep.Results {
			for _, pr := range []*codebench.PhaseResult{&r.Base, r.Plus} {
				t.Logf("zygote check %v: %s: %s (%s)", check, samples[i].Origin, pr.Status, pr.Reason)
			}
		}
		if check && !honest.Passed() {
			t.Errorf("honest sample after the poison: base %s (%s), plus %s (%s), want pass", honest.Base.Status, honest.Base.Reason, honest.Plus.Status, honest.Plus.Reason)
		}
		if !check && honest.Passed() {
			t.Errorf("without the zygote's check the honest sample still passes: the poison did not work, so the test proves nothing")
		}
	}
}

// withoutZygoteCheck returns a copy of the harness at dir whose zygote does
// not check its own state, and pins its digest for the test.
func withoutZygoteCheck(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "harness")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if en.Name() == "supervisor.py" {
			const check = "        if own_state() != start:\n"
			if strings.Count(string(b), check) != 1 {
				t.Fatalf("supervisor.py no longer has %q once: update the test", check)
			}
			b = []byte(strings.Replace(string(b), check, "        if False:\n", 1))
		}
		if err := os.WriteFile(filepath.Join(out, en.Name()), b, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	m, err := digest.Tree(out)
	if err != nil {
		t.Fatal(err)
	}
	wire.HarnessDigest = m.Digest()
	return out
}

// miniDataset loads HumanEval+ Mini from the shared data folder.
func miniDataset(t *testing.T) *task.Dataset {
	t.Helper()
	var f *os.File
	for _, root := range []string{os.Getenv("REPRO_SHARED_DATA"), "../../../shared/data", "../../../../shared/data"} {
		if root == "" {
			continue
		}
		if g, err := os.Open(filepath.Join(root, "humanevalplus-v0.1.10", "HumanEvalPlus-Mini.jsonl.gz")); err == nil {
			f = g
			break
		}
	}
	if f == nil {
		t.Fatal("shared data not found beside the repository (set REPRO_SHARED_DATA)")
	}
	defer f.Close()
	d, err := task.LoadPlus(f, "humanevalplus-mini-v0.1.10", 57064, digest.MustParse("91486741f1627101021fbe50523df08eebb5b0bf5e804b633dcd5ca3c14dbd2f"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.ID, "humanevalplus-mini") {
		t.Fatalf("dataset %s", d.ID)
	}
	return d
}

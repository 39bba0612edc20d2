package humaneval

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/humaneval/judge"
	"github.com/reprolab/repro/internal/humaneval/judge/judgetest"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// sharedData finds the shared data folder: $REPRO_SHARED_DATA, else
// shared/data beside the repository (or one level further up, where the
// repository is a worktree in a folder of worktrees).
func sharedData(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("REPRO_SHARED_DATA"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for _, d := range []string{filepath.Join(root, "..", "shared", "data"), filepath.Join(root, "..", "..", "shared", "data")} {
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	t.Fatalf("shared data not found beside the repository (set REPRO_SHARED_DATA)")
	return ""
}

type pinned struct {
	file string
	size int64
	sum  string
}

var (
	plusPin = pinned{"humanevalplus-v0.1.10/HumanEvalPlus.jsonl.gz", 925932, "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101"}
	miniPin = pinned{"humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz", 57064, "91486741f1627101021fbe50523df08eebb5b0bf5e804b633dcd5ca3c14dbd2f"}
	mbppPin = pinned{"mbppplus-v0.2.0/MbppPlus.jsonl.gz", 336032, "af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63"}
	origPin = pinned{"human-eval/HumanEval.jsonl.gz", 44877, "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"}
)

var datasets struct {
	sync.Mutex
	m map[string]*Dataset
}

// testDataset loads one of the real datasets once per test process.
func testDataset(t testing.TB, id string) *Dataset {
	t.Helper()
	datasets.Lock()
	defer datasets.Unlock()
	if d := datasets.m[id]; d != nil {
		return d
	}
	open := func(p pinned) *os.File {
		f, err := os.Open(filepath.Join(sharedData(t), p.file))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var d *Dataset
	var err error
	switch id {
	case "humanevalplus-v0.1.10", "humanevalplus-mini-v0.1.10":
		p := plusPin
		if id != "humanevalplus-v0.1.10" {
			p = miniPin
		}
		f := open(p)
		defer f.Close()
		d, err = LoadPlus(f, id, p.size, digest.MustParse(p.sum))
	case "mbppplus-v0.2.0":
		f := open(mbppPin)
		defer f.Close()
		d, err = LoadBenchmark(f, id, mbppPin.size, digest.MustParse(mbppPin.sum), MBPPPlus)
	case "humaneval":
		datasets.Unlock()
		plus := testDataset(t, "humanevalplus-v0.1.10")
		datasets.Lock()
		f := open(origPin)
		defer f.Close()
		d, err = LoadOriginal(f, id, origPin.size, digest.MustParse(origPin.sum), plus)
	default:
		t.Fatalf("no test dataset %s", id)
	}
	if err != nil {
		t.Fatal(err)
	}
	if datasets.m == nil {
		datasets.m = map[string]*Dataset{}
	}
	datasets.m[id] = d
	return d
}

// testSandbox returns a launcher for supervisors in the real evaluator
// image. It fails in CI without an engine and skips elsewhere.
func testSandbox(t testing.TB) (Launcher, *sandbox.Engine, sandbox.Image) {
	t.Helper()
	return testSandboxOn(t, sandboxtest.Engine(t))
}

// testSandboxOn is testSandbox with the engine e (and its runtime).
func testSandboxOn(t testing.TB, e *sandbox.Engine) (Launcher, *sandbox.Engine, sandbox.Image) {
	t.Helper()
	img := sandboxtest.Image(t, e)
	dir, err := WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	return SandboxLauncher(e, img, dir, SupervisorLimits()), e, img
}

func testTruth(t testing.TB, d *Dataset, img sandbox.Image) *Truth {
	t.Helper()
	tr, err := OpenTruth(t.TempDir(), TruthKey{Dataset: d.ID, DatasetSHA256: d.SHA256, Image: img.ID, Harness: HarnessDigest, CPU: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

var _ = context.Background

// testOracle is the oracle of a task of benchmark b with the given atol
// and entry point.
func testOracle(b *Benchmark, atol float64, entry string) *judge.Oracle {
	t := &Task{Atol: atol, EntryPoint: entry}
	t.Rules = rulesFor(b, t)
	return judge.NewOracle(t.Atol, t.Rules.Oracle)
}

// Short names for judgetest's builders.
var (
	intv   = judgetest.Int
	floatv = judgetest.Float
)

func mustParse(t testing.TB, b []byte) judge.Value {
	t.Helper()
	val, err := judge.ParseValue(b, judge.DefaultBounds)
	if err != nil {
		t.Fatalf("ParseValue(%x): %v", b, err)
	}
	return val
}

// controlRow sets up one row of a controls-are-needed test: the engine of
// the row's runtime (e0 where it names none) and, where the row names a
// control of the host's (a switch that is on in every other test), that
// control off until the row ends.
func controlRow(t *testing.T, e0 *sandbox.Engine, rt sandbox.Runtime, host *bool) *sandbox.Engine {
	t.Helper()
	e := e0
	if rt != "" {
		e = sandboxtest.EngineRuntime(t, rt)
	}
	if host != nil {
		*host = false
		t.Cleanup(func() { *host = true })
	}
	return e
}

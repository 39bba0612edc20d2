package codebench

import (
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/testenv"
)

// Short names for tasktest's helpers.
var (
	sharedData  = testenv.SharedData
	testDataset = tasktest.Dataset
	miniPin     = tasktest.MiniPin
	mbppPin     = tasktest.MBPPPin
)

// testSandbox returns a launcher for supervisors in the real evaluator
// image. It fails in CI without an engine and skips elsewhere.
func testSandbox(t testing.TB) (wire.Launcher, *sandbox.Engine, sandbox.Image) {
	t.Helper()
	return testSandboxOn(t, sandboxtest.Engine(t))
}

// testSandboxOn is testSandbox with the engine e (and its runtime).
func testSandboxOn(t testing.TB, e *sandbox.Engine) (wire.Launcher, *sandbox.Engine, sandbox.Image) {
	t.Helper()
	img := sandboxtest.Image(t, e)
	dir, err := wire.WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	return wire.SandboxLauncher(e, img, dir, wire.SupervisorLimits()), e, img
}

func testTruth(t testing.TB, d *task.Dataset, img sandbox.Image) *Truth {
	t.Helper()
	tr, err := OpenTruth(t.TempDir(), TruthKey{Dataset: d.ID, DatasetSHA256: d.SHA256, Image: img.ID, Harness: wire.HarnessDigest, CPU: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

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

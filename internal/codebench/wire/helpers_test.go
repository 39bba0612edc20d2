package wire

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/judge/judgetest"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// Short names for judgetest's builders.
var (
	intv   = judgetest.Int
	floatv = judgetest.Float
)

// testOracle is the oracle of a task of benchmark b with the given atol
// and entry point.
func testOracle(b *task.Benchmark, atol float64, entry string) *judge.Oracle {
	t := &task.Task{Atol: atol, EntryPoint: entry}
	t.Rules = b.Rules(t)
	return judge.NewOracle(t.Atol, t.Rules.Oracle)
}

// The scoring's default limits (codebench.DefaultRunLimits), by which the
// host's budgets are checked: the load allowance, and the list's limit
// of a list of inputs (codebench.RunLimits.PhaseLimit at a task timeout
// of 60 s).
const importAllowance = 4.0

func phaseLimit(limits []float64) float64 {
	sum := 0.0
	for _, l := range limits {
		sum += l
	}
	return math.Min(60, sum) + 1
}

// testSandbox returns a Launcher of supervisors in the test engine's
// sandbox, with the embedded harness written out.
func testSandbox(t testing.TB) Launcher {
	t.Helper()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	dir, err := WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	return SandboxLauncher(e, img, dir, SupervisorLimits())
}

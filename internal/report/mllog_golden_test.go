package report

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/testenv"
)

const mllogFixtureHome = "testdata/mllog-home"

var mllogFixtureOnce sync.Once

// writeMLLOGFixture verifies the ten real MiniGo logs, as `repro mllog
// verify --strict` does, and stores the signed run under
// testdata/mllog-home (log names without their folders).
func writeMLLOGFixture(t *testing.T) {
	dir := filepath.Join(testenv.MLPerfLogsDir(t), "dgxa100_ngc22.09_tensorflow", "minigo")
	paths, _ := filepath.Glob(filepath.Join(dir, "result_*.txt"))
	rep, err := mllog.VerifyFiles(context.Background(), paths, mllog.Limits{}, mllog.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Files {
		r.File = filepath.Base(r.File)
	}
	home := t.TempDir()
	r, err := runs.Create(home, "mllog")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := jsonIndent(rep)
	if err := os.WriteFile(filepath.Join(r.Dir, "mllog.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("v0.0.0-fixture")
	rec.Command = []string{"repro", "mllog", "verify", "--strict", "result_0.txt", "..."}
	rec.StartedAt = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	rec.Host = runs.Host{Hostname: "lab-1", OS: "linux", Arch: "amd64", Kernel: "6.1.0", CPUModel: "Example CPU", CPUs: 2, MemBytes: 24 << 30}
	rec.Repro.Go = "go1.24"
	rec.Limits = map[string]any{"ruleset": "2.1.0", "strict": true, "benchmark": ""}
	rec.Extra = map[string]any{"benchmark": "minigo"}
	rec.Summary = map[string]any{"compliant": rep.Compliant, "logs": len(rep.Files)}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(mllogFixtureHome); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(home, "runs"), filepath.Join(mllogFixtureHome, "runs"))
	copyTree(t, filepath.Join(home, "keys", "run-signing.pub"), filepath.Join(mllogFixtureHome, "keys", "run-signing.pub"))
	copyTree(t, filepath.Join(home, "trust.json"), filepath.Join(mllogFixtureHome, "trust.json"))
}

// TestMLLOGGolden compares the HTML and Markdown of a fixed MLLOG run (the
// ten MiniGo logs of MLPerf Training v2.1) with golden files.
func TestMLLOGGolden(t *testing.T) {
	if *updateFixture {
		mllogFixtureOnce.Do(func() { writeMLLOGFixture(t) })
	}
	home := t.TempDir()
	copyTree(t, mllogFixtureHome, home)
	ids, err := runs.List(home)
	if err != nil || len(ids) != 1 {
		t.Fatalf("fixture runs: %v %v", ids, err)
	}
	rep, err := Build(home, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified || rep.MLLOG == nil || len(rep.MLLOG.Logs) != 10 || rep.MLLOG.Scores[0].Minutes != "188.1439" {
		t.Fatalf("fixture run: verified %v %v, %+v", rep.Verified, rep.Problems, rep.MLLOG)
	}
	checkGolden(t, rep, "mllog-report")
}

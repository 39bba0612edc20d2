// Package testenv decides, in one place, what a test does when something
// it needs from outside the repository is missing: a system program, a
// Debian package, a data set under ../shared, the Docker engine, a GPU.
//
// Where skips are disallowed (REPRO_TEST_DISALLOW_SKIP=1, which
// scripts/test.sh sets, or CI=true) a missing component fails the test, so
// a green run means every test ran. Elsewhere the test is skipped with a
// message naming what is missing and how to get it.
//
// The one exception is a test that only means something on a GPU:
// [SkipWithoutGPU] skips it on a machine without one, even where skips are
// otherwise disallowed. Tests skip only through this package;
// internal/layering_test.go keeps it so.
package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// DisallowSkipEnv names the variable that turns every skip into a failure.
const DisallowSkipEnv = "REPRO_TEST_DISALLOW_SKIP"

// SkipDisallowed reports whether a missing component must fail the test:
// REPRO_TEST_DISALLOW_SKIP=1 or CI=true.
func SkipDisallowed() bool {
	return os.Getenv(DisallowSkipEnv) == "1" || os.Getenv("CI") == "true"
}

// Missing stops a test that lacks what (a program, package, data set or
// variable): it fails where skips are disallowed and skips otherwise. how
// says how to provide it.
func Missing(t testing.TB, what, how string) {
	t.Helper()
	if SkipDisallowed() {
		t.Fatalf("%s is missing (%s); %s=1 or CI=true makes this a failure", what, how, DisallowSkipEnv)
	}
	t.Skipf("%s is missing (%s); skipping", what, how)
}

// Heavy stops a test that needs a heavy component (the Docker engine, a
// Slurm cluster, cosign's build, a browser, PyTorch) or that sweeps a large
// space (what names it) when the test binary runs with
// -short, the edit-test loop of the fast unit tests (`go test -short
// ./...`, see README). It goes through Missing, so where skips are
// disallowed -short fails such a test instead of leaving it out: CI never
// passes -short.
func Heavy(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		Missing(t, what, "left out under -short; run without -short for the whole suite")
	}
}

// Getenv returns the value of the variable name, or stops the test with
// Missing when it is unset; what says what the variable should name.
func Getenv(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		Missing(t, name, "set it to "+what)
	}
	return v
}

// HasGPU reports whether this machine has an NVIDIA GPU: the driver lists
// one under /proc/driver/nvidia/gpus or a /dev/nvidiaN device exists. It
// does not depend on PATH, which tests replace with fake programs.
func HasGPU() bool {
	if e, err := os.ReadDir("/proc/driver/nvidia/gpus"); err == nil && len(e) > 0 {
		return true
	}
	m, _ := filepath.Glob("/dev/nvidia[0-9]*")
	return len(m) > 0
}

// SkipWithoutGPU skips a test that only means something on a GPU when
// this machine has none. It is the only skip allowed where skips are
// disallowed.
func SkipWithoutGPU(t testing.TB) {
	t.Helper()
	if !HasGPU() {
		t.Skip("needs an NVIDIA GPU; this machine has none")
	}
}

// MLPerfLogsEnv names the variable that points at the MLPerf Training v2.1
// result logs.
const MLPerfLogsEnv = "REPRO_MLPERF_LOGS"

// MLPerfLogsDir returns the MLPerf Training v2.1 result logs shared with
// the project: $REPRO_MLPERF_LOGS, else shared/data/mlperf-training-v2.1
// in the nearest parent folder of the working directory that has it. It
// stops the test with [Missing] when neither exists.
func MLPerfLogsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(MLPerfLogsEnv); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		cand := filepath.Join(dir, "shared", "data", "mlperf-training-v2.1")
		if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	Missing(t, "the MLPerf Training v2.1 result logs", "set "+MLPerfLogsEnv+" to the folder holding dgxa100_ngc22.09_tensorflow/ and dgxa100_ngc22.04_merlin_hugectr/")
	return ""
}

// FixtureDir is a temporary folder of test fixtures made once per test
// binary and shared by its tests. The zero value is ready to use.
type FixtureDir struct {
	once sync.Once
	path string
	err  error
}

// Path returns the folder, making it on first use: a fresh temporary
// folder named after prefix that fill populates. When making it failed,
// Path fails this test and every later one that asks.
func (f *FixtureDir) Path(t testing.TB, prefix string, fill func(dir string) error) string {
	t.Helper()
	f.once.Do(func() {
		dir, err := os.MkdirTemp("", prefix)
		if err != nil {
			f.err = err
			return
		}
		f.path = dir
		f.err = fill(dir)
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.path
}

// Remove deletes the folder if it was made; TestMain calls it after
// m.Run.
func (f *FixtureDir) Remove() {
	if f.path != "" {
		os.RemoveAll(f.path)
	}
}

// NoDockerEngine points the Docker client at a socket that does not exist
// (DOCKER_HOST, for the rest of the test), for a test of what repro does
// when the engine cannot be reached.
func NoDockerEngine(t testing.TB) {
	t.Helper()
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
}

package testenv

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestSkipDisallowed(t *testing.T) {
	for _, c := range []struct {
		disallow, ci string
		want         bool
	}{
		{"", "", false},
		{"1", "", true},
		{"", "true", true},
		{"0", "false", false},
	} {
		t.Setenv(DisallowSkipEnv, c.disallow)
		t.Setenv("CI", c.ci)
		if got := SkipDisallowed(); got != c.want {
			t.Errorf("%s=%q CI=%q: SkipDisallowed() = %v; want %v", DisallowSkipEnv, c.disallow, c.ci, got, c.want)
		}
	}
}

// recorder stands in for a test so that Missing's verdict can be read;
// like testing.T it stops the goroutine on a failure or skip.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Skip(...any)           { r.skipped = true; runtime.Goexit() }

// run calls f with a fresh recorder in its own goroutine.
func run(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

func TestMissingFailsWhereSkipsAreDisallowed(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(DisallowSkipEnv, "1")
	missing := func(tb testing.TB) { Missing(tb, "a component", "install it") }
	r := run(t, missing)
	if !r.failed || r.skipped {
		t.Errorf("with %s=1: failed=%v skipped=%v; want a failure", DisallowSkipEnv, r.failed, r.skipped)
	}
	t.Setenv(DisallowSkipEnv, "")
	r = run(t, missing)
	if r.failed || !r.skipped {
		t.Errorf("without %s: failed=%v skipped=%v; want a skip", DisallowSkipEnv, r.failed, r.skipped)
	}
	t.Setenv(DisallowSkipEnv, "1")
	t.Setenv("REPRO_TESTENV_UNSET_VARIABLE", "")
	r = run(t, func(tb testing.TB) { Getenv(tb, "REPRO_TESTENV_UNSET_VARIABLE", "anything") })
	if !r.failed {
		t.Error("Getenv of an unset variable did not fail")
	}
}

// TestHeavyOnlyUnderShort runs this test binary again with and without
// -short and reads what Heavy did in TestHeavyProbe there.
func TestHeavyOnlyUnderShort(t *testing.T) {
	for _, c := range []struct {
		short, disallow bool
		want            string
	}{
		{false, false, "--- PASS: TestHeavyProbe"},
		{false, true, "--- PASS: TestHeavyProbe"},
		{true, false, "--- SKIP: TestHeavyProbe"},
		{true, true, "--- FAIL: TestHeavyProbe"},
	} {
		args := []string{"-test.run=^TestHeavyProbe$", "-test.v"}
		if c.short {
			args = append(args, "-test.short")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "CI=", DisallowSkipEnv+"=")
		if c.disallow {
			cmd.Env = append(cmd.Env, DisallowSkipEnv+"=1")
		}
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.want) {
			t.Errorf("short=%v disallow=%v: want %q in:\n%s", c.short, c.disallow, c.want, out)
		}
	}
}

// TestHeavyProbe is run by TestHeavyOnlyUnderShort; alone it passes.
func TestHeavyProbe(t *testing.T) {
	Heavy(t, "a heavy component")
}

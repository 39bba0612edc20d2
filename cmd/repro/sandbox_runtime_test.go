package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/testenv"
)

// TestSandboxRuntimeCommand: the runtime setting is shown and set by
// 'repro sandbox runtime'; a flag cannot weaken it (exit 2); under a runsc
// setting 'repro sandbox check' proves every control under gVisor, and a
// program run under it is held by the policy's seccomp profile; the check
// names each difference of runsc and what holds it instead.
func TestSandboxRuntimeCommand(t *testing.T) {
	dir := t.TempDir()
	home := []string{"REPRO_HOME=" + dir}
	// With no setting the host decides: runsc where the engine's runc has
	// an open known escape (this suite's bookworm machine), runc elsewhere.
	e := sandboxtest.Engine(t)
	want, why := sandbox.DefaultRuntime(sandbox.EngineRunc(context.Background(), e.Client()))
	if r := repro(t, home, "sandbox", "runtime"); r.code != 0 || strings.TrimSpace(r.stdout) != string(want) || !strings.Contains(r.stderr, why) {
		t.Fatalf("default: exit %d, %q %q; want %s (%s)", r.code, r.stdout, r.stderr, want, why)
	}
	if r := repro(t, home, "sandbox", "runtime", "kata"); r.code != 2 {
		t.Fatalf("unknown runtime: exit %d, %q", r.code, r.stderr)
	}
	if r := repro(t, home, "sandbox", "runtime", "runsc"); r.code != 0 || strings.TrimSpace(r.stdout) != "runsc" {
		t.Fatalf("set runsc: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r := repro(t, home, "sandbox", "run", "--runtime", "runc", "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "weaker") {
		t.Fatalf("--runtime runc under a runsc setting: exit %d, %q", r.code, r.stderr)
	}
	sandboxtest.PinInto(t, dir)
	r = repro(t, home, "sandbox", "check")
	if r.code != 0 || !regexp.MustCompile(`(?m)^ok +runtime runsc +Runtime runsc, kernel seen "4\.19\.0-gvisor"`).MatchString(r.stdout) {
		t.Fatalf("sandbox check under a runsc setting: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, d := range sandbox.RunscDifferences {
		if !strings.Contains(r.stdout, "note  "+d.Control) || !strings.Contains(r.stdout, d.HeldBy) {
			t.Errorf("sandbox check under runsc does not name the difference %q and what holds it:\n%s", d.Control, r.stdout)
		}
	}
	// shmget is refused by the profile: under runsc only a filter can
	// refuse it (gVisor implements SysV IPC), gVisor's or the launcher's.
	r = repro(t, home, "sandbox", "run", "--", "python3", "-c",
		"import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.shmget(0, 4096, 0o1600), ctypes.get_errno())")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "-1 1" {
		t.Fatalf("shmget under runsc: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestDefaultRuntimeWhereRuncHasEscapes: on a host whose engine's runc has
// open known escapes (Debian bookworm's 1.1.5), a fresh REPRO_HOME's
// sandbox runs under runsc, and 'sandbox check' says so once, with the
// reason (each open escape by id) and the cost, and warns of nothing
// twice; runc, asked for with --runtime, is refused (exit 3) unless the
// trust file waives each open escape, and the waivers are then reported.
func TestDefaultRuntimeWhereRuncHasEscapes(t *testing.T) {
	e := sandboxtest.Engine(t)
	runc := sandbox.EngineRunc(context.Background(), e.Client())
	if runc == nil || len(runc.OpenFindings()) == 0 {
		testenv.Missing(t, "a runc with an open known escape (Debian bookworm's 1.1.5)", "run on the bookworm test machine")
	}
	dir := t.TempDir()
	home := []string{"REPRO_HOME=" + dir}
	sandboxtest.PinInto(t, dir)
	r := repro(t, home, "sandbox", "check")
	if r.code != 0 || !regexp.MustCompile(`(?m)^runtime +runsc: `).MatchString(r.stdout) {
		t.Fatalf("sandbox check in a fresh home: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "runs use gVisor's runsc by default"); n != 1 {
		t.Errorf("the default is named %d times, want once:\n%s", n, r.stderr)
	}
	for _, f := range runc.OpenFindings() {
		if n := strings.Count(r.stderr, f.ID); n != 1 {
			t.Errorf("%s is named %d times in the warnings, want once:\n%s", f.ID, n, r.stderr)
		}
	}
	for _, want := range []string{"1.6-1.75x", "runtime_waivers"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the note does not name %q:\n%s", want, r.stderr)
		}
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Errorf("printed twice: %q", l)
		}
		seen[l] = true
	}
	r = repro(t, home, "sandbox", "check", "--runtime", "runc")
	if r.code != 3 || !strings.Contains(r.stderr, "runtime_waivers") || strings.Contains(r.stdout, "ok  ") {
		t.Fatalf("--runtime runc without a waiver: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = repro(t, home, "sandbox", "check", "--runtime", "runc", "--trust", runcWaivers(t))
	if r.code != 0 || strings.Count(r.stdout, "  waived    ") != len(runc.OpenFindings()) {
		t.Fatalf("--runtime runc with the waivers: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

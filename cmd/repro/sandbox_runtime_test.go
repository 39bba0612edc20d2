package main

import (
	"strings"
	"testing"
)

// TestSandboxRuntimeCommand: the runtime setting is shown and set by
// 'repro sandbox runtime'; a flag cannot weaken it (exit 2); a run that
// asks for runsc stops with exit 3 before anything runs (the engine lacks
// runsc, or runsc still leaves a control open), never falling back to runc.
func TestSandboxRuntimeCommand(t *testing.T) {
	home := []string{"REPRO_HOME=" + t.TempDir()}
	if r := repro(t, home, "sandbox", "runtime"); r.code != 0 || strings.TrimSpace(r.stdout) != "runc" {
		t.Fatalf("default: exit %d, %q %q", r.code, r.stdout, r.stderr)
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
	for _, args := range [][]string{{"sandbox", "check"}, {"sandbox", "run", "--", "true"}} {
		r := repro(t, home, args...)
		if r.code != 3 || !strings.Contains(r.stderr, "runsc") {
			t.Errorf("repro %v under a runsc setting: exit %d, %q", args, r.code, r.stderr)
		}
	}
}

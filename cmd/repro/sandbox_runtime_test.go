package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// TestSandboxRuntimeCommand: the runtime setting is shown and set by
// 'repro sandbox runtime'; a flag cannot weaken it (exit 2); under a runsc
// setting 'repro sandbox check' proves every control under gVisor, and a
// program run under it is held by the policy's seccomp profile; the check
// names each difference of runsc and what holds it instead.
func TestSandboxRuntimeCommand(t *testing.T) {
	dir := t.TempDir()
	home := []string{"REPRO_HOME=" + dir}
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
	pinTestImage(t, dir)
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

// pinTestImage pins the shared test image in the REPRO_HOME dir.
func pinTestImage(t *testing.T, dir string) {
	t.Helper()
	sandboxtest.Image(t, sandboxtest.Engine(t))
	if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"image.json", "sbom.cdx.json"} {
		b, err := os.ReadFile(filepath.Join(sandboxtest.Home(), "sandbox", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sandbox", f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

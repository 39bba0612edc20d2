package handoff

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/testenv"
)

// TestSlurmJobFailsClosed submits the bundle's batch script to a real
// Slurm cluster on this machine. The node advertises GPUs to the
// scheduler but has no NVIDIA driver and no pyxis, so the job's preflight
// must fail closed: exit 3, the expected FAIL lines in the job output,
// nothing run. A bundle whose preflight.sh was edited is refused with
// exit 4 before any check runs.
func TestSlurmJobFailsClosed(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		testenv.Missing(t, "a node without an NVIDIA driver", "run it where no NVIDIA driver is installed")
	}
	c := testenv.StartSlurm(t, 2)
	w := newMiniGoWorld(t)
	m := w.bundle(t, TargetSlurm)

	id, code, out := c.Submit(t, w.out, filepath.Join(w.out, SbatchFile), 60*time.Second)
	if code != "3" {
		t.Fatalf("job %s exit code %q, want 3; output:\n%s", id, code, out)
	}
	for _, want := range []string{
		"repro-job: bundle " + w.out + ", manifest " + m.Digest,
		"preflight: FAIL minigo.gpu-runtime: nvidia-smi not found: this node has no NVIDIA driver",
		"preflight: FAIL minigo.image: pyxis is not installed",
		"preflight: ok minigo.source: source/. tree digest " + m.Pins[0].SHA256,
		"repro-job: preflight failed on ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "run 0 starting") {
		t.Errorf("a run started:\n%s", out)
	}
	report := filepath.Join(w.path("volumes", "output"), "repro-minigo-"+id, "preflight.txt")
	r, err := ParsePreflightReport(must(os.ReadFile(report)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Result != "fail" || r.Failures != 2 || r.Manifest != m.Digest {
		t.Errorf("report: result %s, %d failures, manifest %s", r.Result, r.Failures, r.Manifest)
	}
	if _, err := os.Stat(filepath.Join(w.path("work"), "repro-work-"+id)); !os.IsNotExist(err) {
		t.Errorf("the job left its work folder behind: %v", err)
	}

	// An edited preflight.sh: refused before anything runs.
	p := filepath.Join(w.out, PreflightFile)
	b := must(os.ReadFile(p))
	writeFile(t, p, bytes.Replace(b, []byte("exit 3\n"), []byte("exit 0\n"), 1), 0o755)
	id, code, out = c.Submit(t, w.out, filepath.Join(w.out, SbatchFile), 60*time.Second)
	if code != "4" || !strings.Contains(out, "preflight.sh is missing or was changed after repro handoff wrote it") || strings.Contains(out, "preflight: ") {
		t.Fatalf("job %s with an edited preflight: exit %q, output:\n%s", id, code, out)
	}
}

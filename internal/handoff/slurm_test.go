package handoff

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/testenv"
)

// slurmCluster is a private single-node Slurm cluster started for a test
// by testdata/start-slurm.sh, with every file under one temporary folder.
type slurmCluster struct {
	dir  string
	conf string
}

// startSlurm starts the cluster, or fails (CI=true) or skips when Slurm,
// munge or root are missing. It stops what it started when the test ends.
func startSlurm(t *testing.T, gpus int) *slurmCluster {
	t.Helper()
	for _, tool := range []string{"sbatch", "scontrol", "sinfo", "slurmctld", "slurmd", "munged"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", tool)); err != nil {
				testenv.Missing(t, "Slurm ("+tool+")", "apt-get install --no-install-recommends slurm-wlm munge")
			}
		}
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root", "slurmd must run as root to start jobs; run the test as root")
	}
	dir, err := os.MkdirTemp("", "repro-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "start-slurm.sh"))
	ports := freePorts(t, 2)
	cmd := exec.Command("sh", script, "start", dir, strconv.Itoa(gpus), strconv.Itoa(ports[0]), strconv.Itoa(ports[1]))
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
	out, err := cmd.CombinedOutput()
	c := &slurmCluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	t.Cleanup(func() {
		exec.Command("sh", script, "stop", dir).Run()
		os.RemoveAll(dir)
	})
	if err != nil {
		logs, _ := exec.Command("sh", "-c", "tail -n 20 "+dir+"/log/*.log").CombinedOutput()
		t.Fatalf("starting Slurm: %v\n%s\n%s", err, out, logs)
	}
	return c
}

// freePorts asks the kernel for n free TCP ports on the loopback address.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func (c *slurmCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	return cmd
}

var (
	jobStateRE = regexp.MustCompile(`\bJobState=(\S+)`)
	exitCodeRE = regexp.MustCompile(`\bExitCode=(\d+):(\d+)`)
)

// submit runs sbatch from dir and waits for the job to end. It returns the
// job id, its exit code and its output, all collected through Slurm.
func (c *slurmCluster) submit(t *testing.T, dir, script string) (string, string, string) {
	t.Helper()
	outFile := filepath.Join(t.TempDir(), "job-%j.out")
	// Submitted from the bundle folder, as its README says.
	cmd := c.command("sbatch", "--parsable", "-o", outFile, script)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, b)
	}
	id := strings.TrimSpace(strings.Split(string(b), ";")[0])
	deadline := time.Now().Add(60 * time.Second)
	var state, code string
	for {
		info, err := c.command("scontrol", "show", "job", "-o", id).CombinedOutput()
		if err != nil {
			t.Fatalf("scontrol show job %s: %v\n%s", id, err, info)
		}
		if m := jobStateRE.FindSubmatch(info); m != nil {
			state = string(m[1])
		}
		if m := exitCodeRE.FindSubmatch(info); m != nil {
			code = string(m[1])
		}
		switch state {
		case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
			out, _ := os.ReadFile(strings.Replace(outFile, "%j", id, 1))
			return id, code, string(out)
		}
		if time.Now().After(deadline) {
			c.command("scancel", id).Run()
			t.Fatalf("job %s still %s after 60 s", id, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

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
	c := startSlurm(t, 2)
	w := newMiniGoWorld(t)
	m := w.bundle(t, TargetSlurm)

	id, code, out := c.submit(t, w.out, filepath.Join(w.out, SbatchFile))
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
	id, code, out = c.submit(t, w.out, filepath.Join(w.out, SbatchFile))
	if code != "4" || !strings.Contains(out, "preflight.sh is missing or was changed after repro handoff wrote it") || strings.Contains(out, "preflight: ") {
		t.Fatalf("job %s with an edited preflight: exit %q, output:\n%s", id, code, out)
	}
}

package testenv

import (
	_ "embed"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startSlurmScript starts or stops a private single-node Slurm cluster;
// see its header.
//
//go:embed start-slurm.sh
var startSlurmScript []byte

// Slurm is a private single-node Slurm cluster started for a test by
// start-slurm.sh, with every file under one temporary folder.
type Slurm struct {
	Dir  string
	Conf string // its slurm.conf; SLURM_CONF for the Slurm commands
}

// StartSlurm starts the cluster, its node advertising gpus GPUs, or stops
// the test through [Missing] when Slurm, munge or root are missing. It
// stops what it started when the test ends.
func StartSlurm(t *testing.T, gpus int) *Slurm {
	t.Helper()
	Heavy(t, "a Slurm cluster")
	for _, tool := range []string{"sbatch", "scontrol", "sinfo", "slurmctld", "slurmd", "munged"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", tool)); err != nil {
				Missing(t, "Slurm ("+tool+")", "apt-get install --no-install-recommends slurm-wlm munge")
			}
		}
	}
	if os.Geteuid() != 0 {
		Missing(t, "root", "slurmd must run as root to start jobs; run the test as root")
	}
	dir, err := os.MkdirTemp("", "repro-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "start-slurm.sh")
	if err := os.WriteFile(script, startSlurmScript, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := FreePorts(t, 2)
	cmd := exec.Command("sh", script, "start", dir, strconv.Itoa(gpus), strconv.Itoa(ports[0]), strconv.Itoa(ports[1]))
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
	out, err := cmd.CombinedOutput()
	c := &Slurm{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
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

// FreePorts asks the kernel for n free TCP ports on the loopback address.
func FreePorts(t *testing.T, n int) []int {
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

// Env returns the environment for a Slurm client command of the cluster.
func (c *Slurm) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf, "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
}

// Command returns a Slurm client command for the cluster.
func (c *Slurm) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	return cmd
}

var (
	jobStateRE = regexp.MustCompile(`\bJobState=(\S+)`)
	exitCodeRE = regexp.MustCompile(`\bExitCode=(\d+):(\d+)`)
)

// Submit runs sbatch from dir and waits up to timeout for the job to end.
// It returns the job id, its exit code and its output, all collected
// through Slurm. args go to sbatch before the script (they override the
// script's #SBATCH lines).
func (c *Slurm) Submit(t *testing.T, dir, script string, timeout time.Duration, args ...string) (string, string, string) {
	t.Helper()
	outFile := filepath.Join(t.TempDir(), "job-%j.out")
	cmd := c.Command("sbatch", append(append([]string{"--parsable", "-o", outFile}, args...), script)...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, b)
	}
	id := strings.TrimSpace(strings.Split(string(b), ";")[0])
	deadline := time.Now().Add(timeout)
	var state, code string
	for {
		info, err := c.Command("scontrol", "show", "job", "-o", id).CombinedOutput()
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
			c.Command("scancel", id).Run()
			t.Fatalf("job %s still %s after %s", id, state, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

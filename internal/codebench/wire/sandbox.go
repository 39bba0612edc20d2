package wire

import (
	"context"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
)

// SupervisorLimits are the sandbox limits of one supervisor container. Each
// program's own process gets tighter limits from the supervisor (see
// codebench.RunLimits); these bound the container as a whole.
func SupervisorLimits() sandbox.Limits {
	return sandbox.Limits{
		NanoCPUs:      1e9,
		Memory:        512 << 20,
		Pids:          64,
		NoFile:        128,
		FSize:         8 << 20,
		TmpfsSize:     64 << 20,
		TmpfsInodes:   4096,
		ResultsSize:   1 << 20,
		ResultsInodes: 16,
		OutputCap:     256 << 20,
		Deadline:      2 * time.Hour,
	}
}

// LargeLimits are the limits of the one supervisor container at a time
// that runs what the ordinary one cannot hold: a task whose canonical
// solution fails in SupervisorLimits gets its ground truth computed again
// here, and is then scored here, its programs' memory limit derived from
// the canonical solution's measured peak (package codebench's
// largeChildMemory). MBPP+'s Mbpp/255 builds a list of 1.66 M tuples
// (about 1.1 GB) for one input. 4 GiB is EvalPlus's own memory limit.
func LargeLimits() sandbox.Limits {
	l := SupervisorLimits()
	l.Memory = 4 << 30
	return l
}

// largeSlot lets one large job run at a time in this process.
var largeSlot = make(chan struct{}, 1)

// SupervisorCmd is the command that starts the supervisor from the harness
// mounted at HarnessTarget: isolated mode ignores PYTHON* variables and
// keeps the current folder off sys.path.
func SupervisorCmd() []string {
	return []string{"/usr/bin/python3", "-I", HarnessTarget + "/supervisor.py"}
}

// SandboxLauncher returns a Launcher that starts each supervisor in a fresh
// container of the evaluator image, with the harness folder (already
// checked with CheckHarness) mounted read-only at /harness and nothing
// else mounted: no dataset, no expected output, no sample file.
func SandboxLauncher(e *sandbox.Engine, img sandbox.Image, harnessDir string, lim sandbox.Limits) Launcher {
	return func(ctx context.Context) (Transport, error) {
		if err := CheckHarness(harnessDir); err != nil {
			return nil, err
		}
		env := map[string]string{"REPRO_SANDBOX": "1"}
		if e.Runtime() == sandbox.Runsc {
			// gVisor shows no cgroup inside: the supervisor's job clock
			// sums the CPU time of the sandbox's processes instead.
			env["REPRO_CPU_CLOCK"] = "proc"
		}
		c, err := e.Start(ctx, sandbox.Spec{
			Image:    img,
			Cmd:      SupervisorCmd(),
			Env:      env,
			ReadOnly: []sandbox.Mount{{Source: harnessDir, Target: HarnessTarget}},
			Limits:   lim,
			Stdin:    true,
			Labels:   map[string]string{"humaneval": "supervisor"},
		})
		if err != nil {
			return nil, err
		}
		t := newSandboxTransport(c)
		// The host's clock of every job (see cpuClock) must be readable:
		// without it no job runs.
		if _, err := c.CPUUsage(); err != nil {
			t.Abort()
			t.Close()
			return nil, exitcode.Errorf(exitcode.Precondition, "repro cannot read the sandbox container's CPU usage on this host, which it holds every job to: %v (repro must run on the engine's host, in its cgroup namespace)", err)
		}
		return t, nil
	}
}

// NewTransport returns the Transport of a supervisor started in c (with
// SupervisorCmd), for a launcher whose containers mount more than
// SandboxLauncher's; it keeps the start of the supervisor's stderr.
func NewTransport(c *sandbox.Container) Transport { return newSandboxTransport(c) }

func newSandboxTransport(c *sandbox.Container) *sandboxTransport {
	t := &sandboxTransport{c: c, stderrDone: make(chan struct{})}
	go t.drainStderr()
	return t
}

type sandboxTransport struct {
	c          *sandbox.Container
	stderr     []byte // the first stderrKeep bytes of the supervisor's stderr
	stderrDone chan struct{}
}

const stderrKeep = 8 << 10

func (t *sandboxTransport) drainStderr() {
	defer close(t.stderrDone)
	buf := make([]byte, 4096)
	for {
		n, err := t.c.Stderr().Read(buf)
		if len(t.stderr) < stderrKeep {
			t.stderr = append(t.stderr, buf[:min(n, stderrKeep-len(t.stderr))]...)
		}
		if err != nil {
			return
		}
	}
}

// Stderr returns the start of the supervisor's stderr once it has ended.
func (t *sandboxTransport) Stderr() string {
	select {
	case <-t.stderrDone:
		return string(t.stderr)
	case <-time.After(5 * time.Second):
		return ""
	}
}

func (t *sandboxTransport) Write(p []byte) (int, error) { return t.c.Stdin().Write(p) }
func (t *sandboxTransport) Read(p []byte) (int, error)  { return t.c.Stdout().Read(p) }

// CPUUsage is the container's CPU usage as the host reads it.
func (t *sandboxTransport) CPUUsage() (time.Duration, error) { return t.c.CPUUsage() }

func (t *sandboxTransport) Abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.c.Kill(ctx)
}

func (t *sandboxTransport) Discard() { t.c.Discard() }

func (t *sandboxTransport) Close() (int64, error) {
	t.c.Stdin().Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := t.c.Wait(ctx)
	if err != nil {
		return 0, err
	}
	return o.PeakMemory, nil
}

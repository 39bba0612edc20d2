package wire

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// clockProbe reads the supervisor's gVisor job clock (JobClock over
// /proc) as fast as it can for a few seconds while two processes fork
// children that each burn 50 ms of CPU time, exit and are reaped: every
// reap moves a child's time into its parent's reaped-children counts
// while sums are being read. The whole-container sum never falls (the
// prober's own time is in it), so any reading more than two ticks below
// an earlier one missed or double-counted a process. It prints reads,
// such drops, the largest, and how far the clock went.
const clockProbe = `
import json, os, sys, time
sys.path.insert(0, "/harness")
import supervisor

class Zygote:
    def cpu(self):
        return 0.0

def reaper():
    while True:
        pid = os.fork()
        if pid == 0:
            t = time.process_time()
            while time.process_time() - t < 0.05:
                pass
            os._exit(0)
        os.waitpid(pid, 0)

kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        reaper()
    kids.append(pid)
clock = supervisor.JobClock(Zygote())
first = prev = clock.usage()
reads = drops = 0
worst = 0.0
end = time.monotonic() + 4
while time.monotonic() < end:
    u = clock.usage()
    reads += 1
    if u < prev - 2 * clock.tick - 1e-9:
        drops += 1
        worst = max(worst, prev - u)
    prev = max(prev, u)
for k in kids:
    os.kill(k, 9)
print(json.dumps({"reads": reads, "drops": drops, "worst": worst, "grew": prev - first}))
`

// TestProcClockCountsEachProcessOnce: the job clock under gVisor sums
// every process's own and reaped children's CPU time over /proc, not at
// one instant. A child reaped between its parent's line and its own was
// counted in neither, and the clock fell by the child's whole time for
// one reading: a result read then was charged too little, and a timeout's
// overrun ended at 0 s. The sum is read parents first and again when a
// process it listed was gone, so no reading falls.
func TestProcClockCountsEachProcessOnce(t *testing.T) {
	e := sandboxtest.EngineRuntime(t, sandbox.Runsc)
	img := sandboxtest.Image(t, e)
	dir := t.TempDir()
	harness, err := WriteHarness(filepath.Join(dir, "harness"))
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe.py")
	if err := os.WriteFile(probe, []byte(clockProbe), 0o444); err != nil {
		t.Fatal(err)
	}
	o, err := e.Run(context.Background(), sandbox.Spec{
		Image: img, Cmd: []string{"python3", "/probe.py"}, Limits: sandbox.SelfTestLimits(),
		Env:      map[string]string{"REPRO_CPU_CLOCK": "proc"},
		ReadOnly: []sandbox.Mount{{Source: harness, Target: "/harness"}, {Source: probe, Target: "/probe.py"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Reads, Drops int
		Worst, Grew  float64
	}
	if o.ExitCode != 0 || json.Unmarshal(o.Stdout, &got) != nil {
		t.Fatalf("the probe exited %d: %s %s", o.ExitCode, o.Stdout, o.Stderr)
	}
	t.Logf("%d readings, the clock went %.2f s", got.Reads, got.Grew)
	// At 50 ms a child, two reapers on a loaded host still reap dozens.
	if got.Reads < 100 || got.Grew < 0.5 {
		t.Fatalf("the probe read %d times while the clock went %.2f s: too little to tell", got.Reads, got.Grew)
	}
	if got.Drops != 0 {
		t.Errorf("%d of %d readings fell below an earlier one, by up to %.2f s", got.Drops, got.Reads, got.Worst)
	}
}

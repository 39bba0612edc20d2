package humaneval

import (
	"context"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/sandbox"
)

func TestExplore2(t *testing.T) {
	_, e, img := testSandbox(t)
	py := `
import os, time, ctypes, sys
libc = ctypes.CDLL(None)
libc.prctl(4, 0, 0, 0, 0)
pid = os.fork()
if pid == 0:
    x = 0
    for i in range(3*10**7): x += i
    os._exit(0)
clk = (~pid << 3) | 2
for _ in range(5):
    time.sleep(0.2)
    try:
        print(time.clock_gettime(clk))
    except OSError as e:
        print("err", e)
t0=time.perf_counter()
for _ in range(100000):
    time.clock_gettime(clk)
print("per call us", (time.perf_counter()-t0)*10)
os.waitpid(pid, 0)
`
	o, err := e.Run(context.Background(), sandbox.Spec{Image: img, Cmd: []string{"/usr/bin/python3", "-c", strings.TrimSpace(py)}, Env: map[string]string{"REPRO_SANDBOX": "1"}, Limits: SupervisorLimits()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", o.Stdout, o.Stderr)
}

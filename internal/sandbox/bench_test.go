package sandbox_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// Benchmarks of the sandbox's costs (run them with bench/sandbox-overhead.sh):
//
//   - BenchmarkContainerRun: one program in a fresh container, from create
//     to removal (the cost of container-per-program).
//   - BenchmarkExecInRunningContainer: one more program started with an
//     engine exec in a running container.
//   - BenchmarkForkServer: one more program forked by a small Python
//     supervisor in a running container, request and reply over the attached
//     stdin and stdout (the HumanEval+ execution model).
//   - BenchmarkForkServerAmortized: the same including the container start
//     and teardown, spread over a batch of 164 programs (one HumanEval+ pass).

// benchRuntime is the runtime of the benchmarks: $REPRO_BENCH_RUNTIME,
// runc when unset.
func benchRuntime(b *testing.B) sandbox.Runtime {
	rt, err := sandbox.ParseRuntime(cmp.Or(os.Getenv("REPRO_BENCH_RUNTIME"), "runc"))
	if err != nil {
		b.Fatal(err)
	}
	return rt
}

func benchSpec(b *testing.B) (*sandbox.Engine, sandbox.Spec) {
	e := sandboxtest.EngineRuntime(b, benchRuntime(b))
	img := sandboxtest.Image(b, e)
	l := sandbox.DefaultLimits()
	l.Deadline = 10 * time.Minute
	return e, sandbox.Spec{Image: img, Limits: l}
}

func BenchmarkContainerRun(b *testing.B) {
	e, s := benchSpec(b)
	s.Cmd = []string{"/bin/true"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o, err := e.Run(context.Background(), s, nil)
		if err != nil || o.ExitCode != 0 {
			b.Fatalf("%v %+v", err, o)
		}
	}
}

func BenchmarkExecInRunningContainer(b *testing.B) {
	e, s := benchSpec(b)
	s.Cmd = []string{"/bin/sleep", "infinity"}
	c, err := e.Start(context.Background(), s)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Wait(context.Background())
	defer c.Kill(context.Background())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code, err := sandbox.ExecAnother(context.Background(), c, []string{"/bin/true"}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
	}
}

// forkServer reads one line per program, forks a child that runs the line
// as Python source with its output on a pipe, waits for it and replies with
// one line: the exit status and what the child wrote.
const forkServer = `
import os, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        try:
            exec(compile(line, "<candidate>", "exec"), {})
            sys.stdout.flush()
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    out.write(b"%d %s\n" % (os.waitstatus_to_exitcode(status), data.strip()))
    out.flush()
`

type server struct {
	c   *sandbox.Container
	in  io.WriteCloser
	out *bufio.Reader
}

func startServer(b *testing.B, e *sandbox.Engine, s sandbox.Spec) *server {
	s.Cmd = []string{"python3", "-c", forkServer}
	s.Stdin = true
	s.Limits.OutputCap = 256 << 20
	c, err := e.Start(context.Background(), s)
	if err != nil {
		b.Fatal(err)
	}
	return &server{c: c, in: c.Stdin(), out: bufio.NewReader(c.Stdout())}
}

func (sv *server) call(b *testing.B, i int) {
	fmt.Fprintf(sv.in, "print(%d * 2)\n", i)
	line, err := sv.out.ReadString('\n')
	if err != nil || line != fmt.Sprintf("0 %d\n", i*2) {
		b.Fatalf("reply %q, %v", line, err)
	}
}

func (sv *server) stop(b *testing.B) {
	sv.in.Close()
	if _, err := sv.c.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkForkServer(b *testing.B) {
	e, s := benchSpec(b)
	sv := startServer(b, e, s)
	sv.call(b, 0) // the interpreter is up
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sv.call(b, i)
	}
	b.StopTimer()
	sv.stop(b)
}

func BenchmarkForkServerAmortized(b *testing.B) {
	const batch = 164
	e, s := benchSpec(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sv := startServer(b, e, s)
		for j := 0; j < batch; j++ {
			sv.call(b, j)
		}
		sv.stop(b)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch)/1e6, "ms/program")
}

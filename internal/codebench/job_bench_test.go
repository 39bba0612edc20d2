package codebench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// BenchmarkJob measures what one job costs the real supervisor in a warm
// container beyond the program's own work, under each runtime: the fork
// of the child, its loading, the sweep, the reap and the emptied /tmp
// (a job of one input whose call does nothing), and a job of 1,000 such
// inputs (also reported per input: less the one-input job, that is what
// each more input costs).
func BenchmarkJob(b *testing.B) {
	for _, rt := range []sandbox.Runtime{sandbox.Runc, sandbox.Runsc} {
		b.Run(string(rt), func(b *testing.B) {
			launch, _, _ := testSandboxOn(b, sandboxtest.EngineRuntime(b, rt))
			w := wire.NewWorker(launch)
			defer w.Close()
			for _, n := range []int{1, 1000} {
				inputs := make([]json.RawMessage, n)
				limits := make([]float64, n)
				for i := range inputs {
					inputs[i], limits[i] = json.RawMessage(`[1]`), 1
				}
				run := func() {
					j := &wire.Job{ID: nextJobID(), EntryPoint: "f", Program: []byte("def f(x):\n    return x\n"), Inputs: inputs,
						Limits: limits, FirstExtra: 10, PhaseLimit: 100, WallFactor: 3, RecordCap: 1 << 20, ByteCap: 1 << 24,
						Memory: DefaultRunLimits().ChildMemory, FSize: 1 << 20}
					end, err := w.Run(context.Background(), j, func(int, wire.Record) bool { return true })
					if err != nil || end.Status != wire.EndDone || end.Retired != "" {
						// (A retired container would put a container's
						// start into the figure: honest jobs leave none.)
						b.Fatalf("%d inputs: %+v, %v", n, end, err)
					}
				}
				name := "job"
				if n > 1 {
					name = "1000inputs"
				}
				b.Run(name, func(b *testing.B) {
					run() // the supervisor is up
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						run()
					}
					if n > 1 {
						b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/input")
					}
				})
			}
		})
	}
}

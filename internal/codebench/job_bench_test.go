package codebench

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
				run := func() { benchJob(b, w, inputs, limits) }
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

// identityJob is a job of the identity function on inputs, with the
// default child memory and caps no honest job comes near.
func identityJob(inputs []json.RawMessage, limits []float64) *wire.Job {
	return &wire.Job{ID: nextJobID(), EntryPoint: "f", Program: []byte("def f(x):\n    return x\n"), Inputs: inputs,
		Limits: limits, FirstExtra: 10, PhaseLimit: 100, WallFactor: 3, RecordCap: 1 << 20, ByteCap: 1 << 24,
		Memory: DefaultRunLimits().ChildMemory, FSize: 1 << 20}
}

// benchJob runs identityJob on inputs in w and requires it to end done,
// in a container that serves on.
func benchJob(b *testing.B, w *wire.Worker, inputs []json.RawMessage, limits []float64) {
	b.Helper()
	end, err := w.Run(context.Background(), identityJob(inputs, limits), func(int, wire.Record) bool { return true })
	if err != nil || end.Status != wire.EndDone || end.Retired != "" {
		// (A retired container would put a container's start into the
		// figure: honest jobs leave none.)
		b.Fatalf("%d inputs: %+v, %v", len(inputs), end, err)
	}
}

// jobControl is a check of the supervisor's and the edits of
// supervisor.py that take its work out.
type jobControl struct {
	control string
	edits   [][2]string
}

// jobControls are the checks the supervisor makes around every job, each
// with the edit of supervisor.py that takes its work out, for
// BenchmarkJobControls (TestControlEditsApply keeps the edits current).
// What is left of a job without them is the fresh process itself: the
// zygote's fork, the program's loading, the reap and the frames.
var jobControls = []jobControl{
	{"the zygote's own state before each fork", [][2]string{{"        if own_state() != start:\n", "        if False:\n"}}},
	{"the sweep of the job's processes", [][2]string{{"    clean = sweep(ch.skip)\n", "    clean = True\n"}}},
	{"the zygote looked at for a stop", [][2]string{
		{"        st = proc_state(str(self.pid))\n", "        st = (b\"S\", 1)\n"},
		{"        pending = stop_pending(self.pid)\n", "        pending = False\n"},
	}},
	{"the process table after each job", [][2]string{{"    elif clean:\n", "    elif False:\n"}}},
	{"stdin read for the job's late frames", [][2]string{{"            cancels = drain_stdin(jid)\n", "            cancels = 0\n"}}},
	// (Each job makes its folder in /tmp: the row still removes it.)
	{"/tmp emptied", [][2]string{{"    empty_tmp()\n    retire(end)\n", "    os.rmdir(WORKDIR)\n    retire(end)\n"}}},
	{"the container's state after each job", [][2]string{stateCheckEdit}},
}

// jobControlRows are jobControls and, last, "every check": all of their
// edits together.
func jobControlRows() []jobControl {
	rows := append([]jobControl{}, jobControls...)
	var all [][2]string
	for _, c := range jobControls {
		all = append(all, c.edits...)
	}
	return append(rows, jobControl{"every check", all})
}

// BenchmarkJobControls measures what each of jobControls costs a job of
// one input, under each runtime: jobs alternate between a warm container
// of the harness as it is and one of the harness without the control,
// and the benchmark reports both jobs' wall time and their difference
// (µs/job-control). The row "every_check" takes them all out together:
// what is left is the cost of the fresh process.
//
//	go test ./internal/codebench -run '^$' -bench BenchmarkJobControls -benchtime 300x
func BenchmarkJobControls(b *testing.B) {
	pinned := wire.HarnessDigest
	defer func() { wire.HarnessDigest = pinned }()
	rows := jobControlRows()
	inputs, limits := []json.RawMessage{json.RawMessage(`[1]`)}, []float64{1}
	for _, rt := range []sandbox.Runtime{sandbox.Runc, sandbox.Runsc} {
		b.Run(string(rt), func(b *testing.B) {
			e := sandboxtest.EngineRuntime(b, rt)
			img := sandboxtest.Image(b, e)
			lim := wire.SupervisorLimits()
			// Every worker starts (and checks its harness against the pin)
			// at its first job, here, each under its own tree's pin.
			wire.HarnessDigest = pinned
			dir, err := wire.WriteHarness(b.TempDir() + "/harness")
			if err != nil {
				b.Fatal(err)
			}
			full := wire.NewWorker(wire.SandboxLauncher(e, img, dir, lim))
			defer full.Close()
			benchJob(b, full, inputs, limits)
			without := make([]*wire.Worker, len(rows))
			for i, r := range rows {
				without[i] = wire.NewWorker(wire.SandboxLauncher(e, img, editedHarnessDir(b, "supervisor.py", r.edits), lim))
				defer without[i].Close()
				benchJob(b, without[i], inputs, limits)
				wire.HarnessDigest = pinned
			}
			for i, r := range rows {
				b.Run(strings.NewReplacer(" ", "_", "/", "").Replace(r.control), func(b *testing.B) {
					var with, out time.Duration
					for n := 0; n < b.N; n++ {
						// Rounds alternate which job goes first.
						ws := [2]*wire.Worker{full, without[i]}
						ds := [2]*time.Duration{&with, &out}
						if n%2 == 1 {
							ws[0], ws[1], ds[0], ds[1] = ws[1], ws[0], ds[1], ds[0]
						}
						for k := range ws {
							t0 := time.Now()
							benchJob(b, ws[k], inputs, limits)
							*ds[k] += time.Since(t0)
						}
					}
					per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
					b.ReportMetric(per(with), "µs/job")
					b.ReportMetric(per(out), "µs/job-without")
					b.ReportMetric(per(with)-per(out), "µs/job-control")
				})
			}
		})
	}
}

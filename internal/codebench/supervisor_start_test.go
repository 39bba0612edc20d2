package codebench

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// TestZygoteFailureIsNamed: a zygote that ends before it is ready stops
// the supervisor before its hello, and the worker's error says how it
// ended (its output goes nowhere, so the wait status is all there is).
func TestZygoteFailureIsNamed(t *testing.T) {
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	pinned := wire.HarnessDigest
	t.Cleanup(func() { wire.HarnessDigest = pinned })
	dir := editedHarnessDir(t, "supervisor.py", [][2]string{{
		"    set_nondumpable(\"zygote\")\n", "    os._exit(4)\n",
	}})
	w := wire.NewWorker(wire.SandboxLauncher(e, img, dir, wire.SupervisorLimits()))
	defer w.Close()
	_, err := w.Run(context.Background(), &wire.Job{ID: nextJobID(), EntryPoint: "f", Program: []byte("def f():\n    return 1\n")},
		func(int, wire.Record) bool { return true })
	want := "the zygote did not start: it sent None after "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "and it ended, exit status 4") {
		t.Fatalf("Run: %v; want an error naming the zygote's exit status 4", err)
	}
	t.Logf("%v", err)
}

// TestSupervisorWaitsForTheHolder: the engine starts the supervisor as soon
// as the container's init runs, and on a loaded host init may not have
// started the holder yet (a CI run saw init, the supervisor and the zygote
// only). The supervisor takes its baseline of the container's processes
// once the container holds init, one other process and itself: a process
// that comes and goes in that time (here an orphan that lives a second,
// reaped by init) delays the start, and one that stays past the wait
// stops the supervisor with the pids named.
func TestSupervisorWaitsForTheHolder(t *testing.T) {
	transient := func(life string) [2]string {
		return [2]string{"    wait_for_holder()\n", "" +
			"    if os.fork() == 0:\n" +
			"        if os.fork() == 0:\n" +
			"            time.sleep(" + life + ")\n" +
			"        os._exit(0)\n" +
			"    os.wait()\n" +
			"    wait_for_holder()\n"}
	}
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		img := sandboxtest.Image(t, e)
		pinned := wire.HarnessDigest
		t.Cleanup(func() { wire.HarnessDigest = pinned })
		run := func(edits [][2]string) (wire.JobEnd, error) {
			dir := editedHarnessDir(t, "supervisor.py", edits)
			w := wire.NewWorker(wire.SandboxLauncher(e, img, dir, wire.SupervisorLimits()))
			defer w.Close()
			return w.Run(context.Background(), identityJob([]json.RawMessage{json.RawMessage(`[1]`)}, []float64{1}),
				func(int, wire.Record) bool { return true })
		}
		t.Run("settles", func(t *testing.T) {
			end, err := run([][2]string{transient("1")})
			if err != nil || end.Status != wire.EndDone {
				t.Fatalf("Run: %+v, %v; want the job done once the orphan is gone", end, err)
			}
		})
		t.Run("stays", func(t *testing.T) {
			_, err := run([][2]string{transient("60"), {"HOLDER_WAIT = 10.0\n", "HOLDER_WAIT = 1.0\n"}})
			want := "after 1 s the container holds other processes than init, the holder and the supervisor ("
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Run: %v; want %q", err, want)
			}
			t.Logf("%v", err)
		})
	})
}

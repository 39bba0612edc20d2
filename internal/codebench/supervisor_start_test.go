package codebench

import (
	"context"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
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

package imagetrust_test

import (
	"context"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/testenv"
)

// TestRunProgramDeadline: a deadline outside (0, 10m] is refused before
// the engine is reached.
func TestRunProgramDeadline(t *testing.T) {
	home := t.TempDir()
	testenv.NoDockerEngine(t)
	for _, d := range []time.Duration{0, -time.Second, 10*time.Minute + 1} {
		o, err := imagetrust.RunProgram(context.Background(), home, imagetrust.RunRequest{Cmd: []string{"true"}, Deadline: d})
		if o != nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("--deadline %v: %v %v", d, o, err)
		}
	}
	if o, err := imagetrust.RunProgram(context.Background(), home, imagetrust.RunRequest{Cmd: []string{"true"}, Deadline: time.Minute}); o != nil || exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("no engine: %v %v", o, err)
	}
}

// TestCheckSandboxNoEngine: without an engine there is no report, and
// the error is exit 3.
func TestCheckSandboxNoEngine(t *testing.T) {
	home := t.TempDir()
	testenv.NoDockerEngine(t)
	notes := 0
	rep, v, err := imagetrust.CheckSandbox(context.Background(), home, imagetrust.Options{}, func(string) { notes++ }, nil)
	if rep != nil || v != nil || exitcode.Of(err) != exitcode.Precondition || notes != 0 {
		t.Fatalf("no engine: %v %v %v, %d notes", rep, v, err, notes)
	}
}

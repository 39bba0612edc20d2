package sandbox

import (
	"context"
	"os"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/testenv"
)

// TestShowRuntime: a runtime given is stored and shown, runc with a note
// on its waivers; an unknown one changes nothing; with none set the
// engine decides, and no engine is exit 3.
func TestShowRuntime(t *testing.T) {
	home := t.TempDir()
	testenv.NoDockerEngine(t)
	if _, err := ShowRuntime(context.Background(), home, nil); exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("no setting, no engine: %v", err)
	}
	if _, err := ShowRuntime(context.Background(), home, []string{"bogus"}); err == nil {
		t.Fatal("an unknown runtime was accepted")
	}
	if _, err := os.Stat(layout.Home(home).SandboxSettings()); !os.IsNotExist(err) {
		t.Fatalf("an unknown runtime was stored: %v", err)
	}
	rt, err := ShowRuntime(context.Background(), home, []string{"runsc"})
	if err != nil || rt.Runtime != Runsc || rt.Note != "" {
		t.Fatalf("runsc: %+v %v", rt, err)
	}
	if rt, err = ShowRuntime(context.Background(), home, nil); err != nil || rt.Runtime != Runsc {
		t.Fatalf("runsc kept: %+v %v", rt, err)
	}
	if rt, err = ShowRuntime(context.Background(), home, []string{"runc"}); err != nil || rt.Runtime != Runc || rt.Note == "" {
		t.Fatalf("runc: %+v %v", rt, err)
	}
}

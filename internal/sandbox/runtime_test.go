package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
)

func TestChooseRuntime(t *testing.T) {
	home := t.TempDir()
	if rt, err := ChooseRuntime(home, ""); err != nil || rt != Runc {
		t.Fatalf("no setting: %v, %v; want runc", rt, err)
	}
	if rt, err := ChooseRuntime(home, "runsc"); err != nil || rt != Runsc {
		t.Fatalf("--runtime runsc over runc: %v, %v", rt, err)
	}
	if err := WriteSettings(home, Settings{Runtime: Runsc}); err != nil {
		t.Fatal(err)
	}
	if rt, err := ChooseRuntime(home, ""); err != nil || rt != Runsc {
		t.Fatalf("setting runsc: %v, %v", rt, err)
	}
	// A flag never weakens the setting.
	if _, err := ChooseRuntime(home, "runc"); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "weaker") {
		t.Fatalf("--runtime runc under a runsc setting: %v, want a usage error", err)
	}
	if _, err := ChooseRuntime(home, "kata"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unknown runtime: %v", err)
	}
	for _, bad := range []string{`{"runtime": "kata"}`, `{"runtime": "runsc", "x": 1}`, `{"runtime": "runsc"} {}`, `[`} {
		if err := os.WriteFile(layout.Home(home).SandboxSettings(), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ChooseRuntime(home, ""); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), filepath.Base(layout.Home(home).SandboxSettings())) {
			t.Errorf("settings %s: %v, want a usage error naming the file", bad, err)
		}
	}
}

// TestRunscRefusedWhileGapsRemain: an engine for runsc is refused with
// exit 3 while RunscGaps lists a control runsc does not hold (a listed
// test gap, then the real list), and given when the list is empty; a missing runtime names the setup step, and
// nothing falls back to runc.
func TestRunscRefusedWhileGapsRemain(t *testing.T) {
	saved := RunscGaps
	t.Cleanup(func() { RunscGaps = saved })
	RunscGaps = []string{"test gap: a control runsc would not hold"}
	_, err := ConnectRuntime(context.Background(), Runsc)
	if exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("with a gap listed: exit %d, want 3: %v", exitcode.Of(err), err)
	}
	if !strings.Contains(err.Error(), "weaker policy") && !strings.Contains(err.Error(), "scripts/deps.sh runsc") {
		t.Fatalf("error says neither the gaps nor the setup step: %v", err)
	}
	missing := strings.Contains(err.Error(), "scripts/deps.sh runsc")
	RunscGaps = saved
	e, err := ConnectRuntime(context.Background(), Runsc)
	switch {
	case err == nil:
		diffs := e.RuntimeFacts().Differences
		e.Close()
		if len(RunscGaps) > 0 {
			t.Fatal("an engine for runsc was given despite RunscGaps")
		}
		if len(diffs) != len(RunscDifferences) {
			t.Fatalf("the engine's runtime facts list %d differences, want %d", len(diffs), len(RunscDifferences))
		}
	case len(RunscGaps) > 0 && exitcode.Of(err) == exitcode.Precondition && strings.Contains(err.Error(), RunscGaps[0]):
		t.Log(err) // refused for the gaps still listed
	case missing && exitcode.Of(err) == exitcode.Precondition:
		t.Log(err) // runsc is not registered with this engine
	default:
		t.Fatalf("exit %d: %v", exitcode.Of(err), err)
	}
}

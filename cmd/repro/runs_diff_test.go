package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

func TestRunsDiffCommand(t *testing.T) {
	home := t.TempDir()
	t.Setenv("REPRO_HOME", home)
	a := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", FailingInput: `[3]`, Reason: "AssertionError"}}, runstest.HumanEvalOptions{})
	b := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Harness: strings.Repeat("5", 64)})

	code, stdout, stderr := runRepro(t, "runs", "diff", a, b)
	if code != exitcode.OK || !strings.Contains(stdout, "HumanEval/0: fail (0/1) -> pass (1/1)") || !strings.Contains(stdout, "harness digest") {
		t.Fatalf("runs diff: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runRepro(t, "runs", "diff", "--json", a, b)
	var doc struct {
		Flipped []struct {
			Task string
			A    struct {
				FailingInput string `json:"failing_input"`
			}
		}
	}
	if code != exitcode.OK || json.Unmarshal([]byte(stdout), &doc) != nil || len(doc.Flipped) != 1 || doc.Flipped[0].A.FailingInput != "[3]" {
		t.Fatalf("runs diff --json: exit %d %s", code, stdout)
	}

	os.WriteFile(filepath.Join(home, "runs", b, "eval_results.json"), []byte("{}"), 0o644)
	if code, stdout, stderr := runRepro(t, "runs", "diff", a, b); code != exitcode.Integrity || !strings.Contains(stdout, "NOT verified") || !strings.Contains(stderr, b) {
		t.Fatalf("tampered side: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"runs", "diff", a}, {"runs", "diff", a, "humaneval-20990101"}} {
		if code, _, _ := runRepro(t, args...); code != exitcode.Usage {
			t.Errorf("repro %v: exit %d, want 2", args, code)
		}
	}
}

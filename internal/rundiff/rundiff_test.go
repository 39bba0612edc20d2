package rundiff

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// twoRuns makes run A (HumanEval/1 fails on [1]) and run B (HumanEval/1
// passes, HumanEval/2 fails on a hostile input) on another image and host.
func twoRuns(t *testing.T) (home, a, b string) {
	t.Helper()
	home = t.TempDir()
	a = runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", Pass: true},
		{Task: "HumanEval/1", FailingInput: `[1]`, Reason: "AssertionError"},
		{Task: "HumanEval/2", Pass: true},
	}, runstest.HumanEvalOptions{})
	b = runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", Pass: true},
		{Task: "HumanEval/1", Pass: true},
		{Task: "HumanEval/2", FailingInput: `["\u001b[2J\nok HumanEval/9"]`, Reason: "wrong output\u001b[2J\nforged line"},
	}, runstest.HumanEvalOptions{ImageID: "sha256:" + strings.Repeat("9", 64), Hostname: "lab-2"})
	return home, a, b
}

func TestDiff(t *testing.T) {
	home, a, b := twoRuns(t)
	d, err := Build(home, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Verified() || d.A.ID != a || d.B.ID != b {
		t.Fatalf("sides: %+v %+v", d.A, d.B)
	}
	if len(d.Flipped) != 2 || d.Tasks != 3 {
		t.Fatalf("flipped: %+v of %d", d.Flipped, d.Tasks)
	}
	f1, f2 := d.Flipped[0], d.Flipped[1]
	if f1.Task != "HumanEval/1" || f1.A.Status != "fail" || f1.A.FailingInput != "[1]" || f1.A.Reason != "AssertionError" || f1.B.Status != "pass" {
		t.Errorf("HumanEval/1: %+v", f1)
	}
	if f2.Task != "HumanEval/2" || f2.A.Status != "pass" || f2.B.Status != "fail" || !strings.Contains(f2.B.FailingInput, "ok HumanEval/9") {
		t.Errorf("HumanEval/2: %+v", f2)
	}
	if len(d.Score) != 1 || d.Score[0].Key != "base pass@1" || d.Score[0].A != "0.6667" || d.Score[0].B != "0.6667" {
		t.Errorf("score: %+v", d.Score)
	}
	got := map[string]bool{}
	for _, v := range d.Provenance {
		got[v.Section+" "+v.Key] = true
	}
	if len(got) != 2 || !got["image id"] || !got["host hostname"] {
		t.Errorf("provenance that differs: %+v; want image id and host hostname only", d.Provenance)
	}
	var buf bytes.Buffer
	d.WriteText(&buf)
	text := buf.String()
	// The score heading is a line of its own, not an escaped newline.
	if !strings.Contains(text, "\nscore\n  base pass@1") || strings.Contains(text, `\nscore`) {
		t.Errorf("text lacks the score heading on its own line:\n%s", text)
	}
	for _, want := range []string{"tasks that changed verdict: 2 of 3", "HumanEval/1: fail (0/1) -> pass (1/1)", "A failing base input [1]: AssertionError", "host hostname"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// A failing input or reason cannot forge a line or send an escape.
	if strings.Contains(text, "\x1b") || strings.Contains(text, "\nok HumanEval/9") || strings.Contains(text, "\nforged line") {
		t.Errorf("untrusted text reached the output raw:\n%s", text)
	}
}

func TestDiffSameRun(t *testing.T) {
	home, a, _ := twoRuns(t)
	d, err := Build(home, a, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Flipped) != 0 || len(d.Provenance) != 0 || len(d.Summary) != 0 {
		t.Fatalf("a run differs from itself: %+v", d)
	}
}

func TestDiffMarksUnverifiedSide(t *testing.T) {
	home, a, b := twoRuns(t)
	// Rewriting B's results so HumanEval/2 passes breaks its record.
	p := filepath.Join(home, "runs", b, "eval_results.json")
	raw, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(raw, []byte(`"fail"`), []byte(`"pass"`), 1), 0o644)
	d, err := Build(home, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !d.A.Verified || d.B.Verified || len(d.B.Problems) == 0 || d.Verified() {
		t.Fatalf("tampered side not marked: %+v", d.B)
	}
}

// TestDiffVerifiedError: the exit status of a diff is an integrity error
// that names the first side (A before B) that does not verify, and nil
// when both do.
func TestDiffVerifiedError(t *testing.T) {
	home, a, b := twoRuns(t)
	d, err := Build(home, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.VerifiedError(); err != nil {
		t.Fatalf("both sides verify: %v", err)
	}
	os.WriteFile(filepath.Join(home, "runs", b, "eval_results.json"), []byte("{}"), 0o644)
	if d, err = Build(home, a, b); err != nil {
		t.Fatal(err)
	}
	if err := d.VerifiedError(); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "run "+b+" does not match") {
		t.Fatalf("B tampered: %v", err)
	}
	os.WriteFile(filepath.Join(home, "runs", a, "eval_results.json"), []byte("{}"), 0o644)
	if d, err = Build(home, a, b); err != nil {
		t.Fatal(err)
	}
	if err := d.VerifiedError(); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "run "+a+" does not match") {
		t.Fatalf("both tampered, A first: %v", err)
	}
}

func TestDiffUnknownRun(t *testing.T) {
	home, a, _ := twoRuns(t)
	if _, err := Build(home, a, "humaneval-20990101"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unknown run: %v", err)
	}
}

// TestDiffNamesTheEngine: two runs of the same samples, one scored by
// repro's engine and one by EvalPlus's: the diff names each side's engine
// and lists the engine among the provenance that differs.
func TestDiffNamesTheEngine(t *testing.T) {
	home := t.TempDir()
	samples := []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", Pass: true}}
	a := runstest.HumanEvalRun(t, home, samples, runstest.HumanEvalOptions{Engine: "repro"})
	b := runstest.HumanEvalRun(t, home, samples, runstest.HumanEvalOptions{Engine: "evalplus"})
	d, err := Build(home, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if d.A.Engine != "repro" || d.B.Engine != "evalplus" {
		t.Errorf("engines %q %q", d.A.Engine, d.B.Engine)
	}
	found := false
	for _, v := range d.Provenance {
		found = found || v.Section == "harness" && v.Key == "engine" && v.A == "repro" && v.B == "evalplus"
	}
	if !found {
		t.Errorf("provenance that differs lacks the engine: %+v", d.Provenance)
	}
	var buf bytes.Buffer
	d.WriteText(&buf)
	if !strings.Contains(buf.String(), "engine repro)") || !strings.Contains(buf.String(), "engine evalplus)") {
		t.Errorf("the text does not name the engines:\n%s", buf.String())
	}
}

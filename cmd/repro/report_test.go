package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// reportHome copies the report package's fixture home (one signed
// HumanEval run) and points REPRO_HOME at the copy.
func reportHome(t *testing.T) (home, id string) {
	t.Helper()
	home = t.TempDir()
	if out, err := exec.Command("cp", "-R", "../../internal/report/testdata/home/.", home).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v %s", err, out)
	}
	ents, err := os.ReadDir(filepath.Join(home, "runs"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("fixture runs: %v %v", ents, err)
	}
	t.Setenv("REPRO_HOME", home)
	return home, ents[0].Name()
}

func TestReportCommand(t *testing.T) {
	home, id := reportHome(t)
	code, stdout, stderr := runRepro(t, "report", id[:20], "--format", "json")
	if code != exitcode.OK {
		t.Fatalf("report --format json: exit %d: %s", code, stderr)
	}
	var doc struct {
		Run      struct{ ID string }
		Verified bool
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Run.ID != id || !doc.Verified {
		t.Fatalf("JSON report: %+v %v", doc, err)
	}

	out := filepath.Join(t.TempDir(), "run.html")
	if code, _, stderr := runRepro(t, "report", id, "--out", out); code != exitcode.OK || !strings.Contains(stderr, out) {
		t.Fatalf("report --out: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "✔ verified") {
		t.Fatalf("HTML report: %v", err)
	}

	os.WriteFile(filepath.Join(home, "runs", id, "eval_results.json"), []byte("{}"), 0o644)
	code, stdout, _ = runRepro(t, "report", id, "--format", "md")
	if code != exitcode.OK || !strings.Contains(stdout, "**NOT verified**") || !strings.Contains(stdout, "eval\\_results.json") {
		t.Fatalf("tampered run: exit %d: %s", code, stdout)
	}

	// A link to the run folder, from outside REPRO_HOME, must not carry a
	// report into it either.
	linkToRun := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(filepath.Join(home, "runs", id), linkToRun); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"report", "humaneval-20990101"},
		{"report", id, "--format", "pdf"},
		{"report"},
		{"report", id, "--out", filepath.Join(home, "runs", id, "report.html")},
		{"report", id, "--out", filepath.Join(linkToRun, "report.html")},
	} {
		if code, _, _ := runRepro(t, args...); code != exitcode.Usage {
			t.Errorf("repro %v: exit %d, want %d", args, code, exitcode.Usage)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "runs", id, "report.html")); err == nil {
		t.Fatal("a report was written into the run folder")
	}
}

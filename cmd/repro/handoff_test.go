package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func runHandoffCLI(t *testing.T, args ...string) (string, string, exitcode.Code) {
	t.Helper()
	code, stdout, stderr := runRepro(t, args...)
	return stdout, stderr, code
}

// TestHandoffBareMachine: with no configuration, both workloads exit 3
// with one line per unmet requirement and write nothing.
func TestHandoffBareMachine(t *testing.T) {
	t.Setenv("REPRO_HOME", t.TempDir())
	for _, tc := range []struct {
		workload string
		lines    []string
	}{
		{"minigo", []string{"minigo.image (", "minigo.source (", "minigo.gpu-runtime (", "minigo.environment (", "minigo.entrypoint (", "minigo.data-classes ("}},
		{"dlrm", []string{"dlrm.image (", "dlrm.checkpoint (", "dlrm.dataset (", "dlrm.license (", "dlrm.preprocessed (", "dlrm.runtime (", "dlrm.gpu-runtime (", "dlrm.environment (", "dlrm.source (", "dlrm.data-classes ("}},
	} {
		out := filepath.Join(t.TempDir(), "X")
		stdout, stderr, code := runHandoffCLI(t, "handoff", tc.workload, "--out", out)
		if code != exitcode.Precondition {
			t.Fatalf("%s: exit %d, want 3\n%s", tc.workload, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != len(tc.lines)+1 || stdout != "" {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.workload, len(lines), len(tc.lines)+1, stderr)
		}
		for i, want := range tc.lines {
			if i < len(lines) && !strings.HasPrefix(lines[i], want) {
				t.Errorf("%s: line %d is %q, want %s…", tc.workload, i, lines[i], want)
			}
		}
		if !strings.Contains(lines[len(lines)-1], "no bundle was written") {
			t.Errorf("%s: last line %q", tc.workload, lines[len(lines)-1])
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: %s was created", tc.workload, out)
		}
		// --json: the same results as one document on stdout.
		stdout, _, code = runHandoffCLI(t, "handoff", tc.workload, "--out", out, "--json")
		var doc struct {
			Ready        bool `json:"ready"`
			Requirements []struct {
				Requirement string `json:"requirement"`
				OK          bool   `json:"ok"`
			} `json:"requirements"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != exitcode.Precondition || doc.Ready || len(doc.Requirements) == 0 {
			t.Errorf("%s --json: exit %d, %v: %s", tc.workload, code, err, stdout)
		}
	}
}

func TestHandoffUsage(t *testing.T) {
	t.Setenv("REPRO_HOME", t.TempDir())
	if _, _, code := runHandoffCLI(t, "handoff", "minigo"); code != exitcode.Usage {
		t.Errorf("no --out: exit %d", code)
	}
	cfg := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(cfg, []byte(`{"volumes":{},"gpus":"eight"}`), 0o644)
	if _, stderr, code := runHandoffCLI(t, "handoff", "dlrm", "--out", t.TempDir()+"/X", "--config", cfg); code != exitcode.Usage || !strings.Contains(stderr, "config "+cfg) {
		t.Errorf("bad config: exit %d %s", code, stderr)
	}
	if _, stderr, code := runHandoffCLI(t, "handoff", "verify", t.TempDir()); code != exitcode.Precondition || !strings.Contains(stderr, "not a handoff bundle") {
		t.Errorf("verify of an empty folder: exit %d %s", code, stderr)
	}
	stdout, _, code := runHandoffCLI(t, "handoff", "requirements", "--json")
	var ws []struct {
		Name         string `json:"name"`
		Requirements []struct {
			ID     string `json:"id"`
			Checks []struct {
				Where string `json:"where"`
			} `json:"checks"`
		} `json:"requirements"`
	}
	if err := json.Unmarshal([]byte(stdout), &ws); err != nil || code != exitcode.OK || len(ws) != 2 || len(ws[0].Requirements) == 0 {
		t.Errorf("requirements --json: %v %s", err, stdout)
	}
}

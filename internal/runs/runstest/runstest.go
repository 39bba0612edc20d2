// Package runstest holds test helpers for run folders.
package runstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/runs"
)

// Verified opens the run in folder dir (REPRO_HOME/runs/<id>), checks it
// against its signed record, and returns the record; any failure fails t.
func Verified(t testing.TB, dir string) *runs.Record {
	t.Helper()
	run, err := runs.Open(filepath.Dir(filepath.Dir(dir)), filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	rec, problems, err := run.Verify()
	if err != nil {
		t.Fatalf("run %s does not match its signed record: %v %v", run.ID, err, problems)
	}
	return rec
}

// Sample is one scored sample of a HumanEvalRun: its task, whether it
// passed, and when not, the failing input (a JSON array of arguments) and
// the reason.
type Sample struct {
	Task, Solution string
	Pass           bool
	FailingInput   string
	Reason         string
}

// HumanEvalOptions vary the record of a HumanEvalRun.
type HumanEvalOptions struct {
	ImageID  string
	Hostname string
	Harness  string
	Dataset  string
}

// HumanEvalRun writes a signed humaneval run under home through the runs
// API: an EvalPlus-format eval_results.json of samples (base phase only)
// and a record with summary, image, limits, host and dataset, as
// `repro humaneval score` leaves them. It returns the run's id.
func HumanEvalRun(t testing.TB, home string, samples []Sample, o HumanEvalOptions) string {
	t.Helper()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	eval := map[string][]map[string]any{}
	passed := 0
	tasks := map[string]bool{}
	for _, s := range samples {
		tasks[s.Task] = true
		e := map[string]any{"task_id": s.Task, "solution": s.Solution, "base_status": "pass", "plus_status": nil,
			"base_fail_tests": []any{}, "plus_fail_tests": []any{}, "base_elapsed": 0.5, "base_limit": 4.0}
		if s.Pass {
			passed++
		} else {
			e["base_status"] = "fail"
			e["base_fail_tests"] = []json.RawMessage{json.RawMessage(s.FailingInput)}
			e["base_reason"] = s.Reason
		}
		eval[s.Task] = append(eval[s.Task], e)
	}
	rate := 0.0
	if len(samples) > 0 {
		rate = float64(passed) / float64(len(samples))
	}
	b, err := json.MarshalIndent(map[string]any{"date": "2026-01-02 03:04", "hash": "fe585eb4df8c88d844eeb463ea4d0302", "eval": eval,
		"pass_at_k": map[string]any{"base": map[string]float64{"pass@1": rate}}}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if o.ImageID == "" {
		o.ImageID = "sha256:" + strings.Repeat("1", 64)
	}
	if o.Hostname == "" {
		o.Hostname = "lab-1"
	}
	if o.Harness == "" {
		o.Harness = strings.Repeat("4", 64)
	}
	if o.Dataset == "" {
		o.Dataset = "HumanEvalPlus-v0.1.10"
	}
	rec := r.NewRecord("v0.0.0-test")
	rec.Host = runs.Host{Hostname: o.Hostname, OS: "linux", Arch: "amd64", Kernel: "6.1.0", CPUModel: "Example CPU", CPUs: 2, MemBytes: 24 << 30}
	rec.Assets = []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32), Size: 1234}}
	rec.Image = map[string]string{"id": o.ImageID, "manifest_digest": "sha256:" + strings.Repeat("2", 64)}
	rec.Limits = map[string]any{"harness_digest": o.Harness, "parallel": 2}
	rec.SelfCheck = map[string]any{"tasks": len(tasks), "passed": len(tasks)}
	rec.Summary = map[string]any{"tasks": len(tasks), "samples": len(samples), "base_pass_at_k": map[string]float64{"pass@1": rate}, "plus_scored": false, "subset": true}
	rec.Extra = map[string]any{"dataset": o.Dataset}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

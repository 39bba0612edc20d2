package report

import (
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/handoff"
	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/workload"
)

// TestHandoffRun: a handoff ingest run, recorded through the workload API
// with the handoff package's own ingest record, shows its verdict, the
// preflight checklist and every training run, with hostile text escaped.
func TestHandoffRun(t *testing.T) {
	home := t.TempDir()
	run, err := workload.Start(home, "handoff-minigo", "test")
	if err != nil {
		t.Fatal(err)
	}
	minutes, olympic := 312.5, 300.25
	in := handoff.IngestRecord{
		Workload: "minigo", Benchmark: "minigo", Ruleset: "2.1.0", Verdict: handoff.VerdictNegative,
		Problems:  []string{"run 2: " + hostile},
		Preflight: []handoff.ReportSummary{{File: "preflight-node.json", Mode: handoff.ModeNode, Host: "gpu-1", Result: handoff.CheckOK, PinsVerified: 3}},
		Runs: []handoff.RunRecord{
			{Index: 1, Seed: 11, Host: "gpu-1", Compliant: true, Status: "success", Minutes: &minutes},
			{Index: 2, Seed: 12, Host: hostile, Compliant: false, Problems: []string{hostile}},
		},
		Score: &mllog.SetScore{Benchmark: "minigo", Runs: 2, RequiredRuns: 10, Minutes: &olympic},
	}
	if err := run.WriteJSON("ingest.json", in, 0o600); err != nil {
		t.Fatal(err)
	}
	run.Record.Image = map[string]string{"reference": "registry.example/minigo@sha256:" + strings.Repeat("9", 64)}
	run.Record.Summary = map[string]any{"verdict": "negative", "runs": 2}
	run.Record.Extra = map[string]string{"bundle": "/tmp/b", "manifest_digest": strings.Repeat("8", 64)}
	if err := run.Finish(1); err != nil {
		t.Fatal(err)
	}
	rep, err := Build(home, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	h := rep.Handoff
	if !rep.Verified || h == nil || h.Verdict != "negative" || len(h.Preflight) != 1 || len(h.Runs) != 2 ||
		h.Runs[0].Minutes != "312.50" || h.ScoreMinutes != "300.25" || len(rep.Details) != 2 || len(rep.Provenance.Image) != 1 {
		t.Fatalf("handoff report: %+v %+v", rep, h)
	}
	html := render(t, rep, "html")
	for _, want := range []string{"Requirement checklist", "preflight-node.json", "312.50", "olympic time to train 300.25", "image reference", "&lt;script&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(html, "<script") || strings.Contains(render(t, rep, "md"), "<script") {
		t.Errorf("markup from ingest.json reached a report")
	}
}

package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/runs"
)

// TestMLLOGSection: a mllog run's report shows each log's verdict and time
// to train, the olympic score and one accuracy line per log with the
// target; a hostile log name shows as text in HTML and Markdown.
func TestMLLOGSection(t *testing.T) {
	home := t.TempDir()
	r, err := runs.Create(home, "mllog")
	if err != nil {
		t.Fatal(err)
	}
	minutes, score, target, e1, e2 := 101.5, 99.25, 0.5, 1.0, 2.0
	rep := &mllog.Report{Ruleset: "2.1.0", Strict: true, Compliant: false, Files: []*mllog.Result{
		{File: "result_0.txt", Benchmark: "minigo", Compliant: true, Minutes: &minutes, Target: "in [0.5, 1)", TargetValue: &target,
			Accuracy: []mllog.AccuracyPoint{{Line: 3, Epoch: &e1, Value: 0.2}, {Line: 9, Epoch: &e2, Value: 0.6, Reached: true}}},
		{File: hostile + ".txt", Benchmark: "minigo", Findings: []mllog.Finding{{Rule: "x", Severity: mllog.SeverityError, Message: hostile}},
			Accuracy: []mllog.AccuracyPoint{{Line: 3, Epoch: &e1, Value: 0.1}}},
	}, Scores: []mllog.SetScore{{Benchmark: "minigo", Runs: 10, RequiredRuns: 10, Dropped: 1, Minutes: &score}}}
	b, _ := jsonIndent(rep)
	if err := os.WriteFile(filepath.Join(r.Dir, "mllog.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("test")
	rec.Extra = map[string]any{"benchmark": "minigo"}
	if err := r.Finish(rec, 1); err != nil {
		t.Fatal(err)
	}
	got, err := Build(home, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	m := got.MLLOG
	if m == nil || len(m.Logs) != 2 || m.Logs[0].Reached != "2" || m.Logs[0].Minutes != "101.5000" || m.Scores[0].Minutes != "99.2500" || len(m.Charts) != 1 || len(m.Charts[0].Lines) != 3 { // two logs and the target
		t.Fatalf("section: %+v", m)
	}
	html := render(t, got, "html")
	if !strings.Contains(html, "99.2500") || !strings.Contains(html, "<polyline") || !strings.Contains(html, "target in [0.5, 1)") {
		t.Errorf("HTML lacks the score or the chart:\n%s", html)
	}
	if strings.Contains(html, "<script") || !strings.Contains(html, "&lt;script&gt;") {
		t.Errorf("hostile log name reached the HTML as markup")
	}
	md := render(t, got, "md")
	if strings.Contains(md, "<script") || !strings.Contains(md, "**99.2500**") {
		t.Errorf("Markdown:\n%s", md)
	}
}

func jsonIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", " ") }

package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// maxIngestBytes bounds the read of a handoff run's ingest.json.
const maxIngestBytes = 16 << 20

// Handoff is the section of a handoff ingest run: the verdict, the
// preflight checklist that came back, each training run, and the score.
type Handoff struct {
	Workload  string          `json:"workload"`
	Benchmark string          `json:"benchmark"`
	Ruleset   string          `json:"ruleset"`
	Verdict   string          `json:"verdict"`
	Problems  []string        `json:"problems"`
	Preflight []PreflightRow  `json:"preflight"`
	Runs      []HandoffRunRow `json:"runs"`
	// ScoreMinutes is the olympic mean time to train, "" when the set
	// cannot be scored.
	ScoreMinutes string `json:"score_minutes,omitempty"`
	ScoreNote    string `json:"score_note,omitempty"`
}

// PreflightRow is one preflight report that came back.
type PreflightRow struct {
	File         string `json:"file"`
	Mode         string `json:"mode"`
	Host         string `json:"host"`
	Result       string `json:"result"`
	PinsVerified int    `json:"pins_verified"`
}

// HandoffRunRow is one training run of a handoff.
type HandoffRunRow struct {
	Index     int    `json:"index"`
	Seed      int64  `json:"seed"`
	Host      string `json:"host,omitempty"`
	Compliant bool   `json:"compliant"`
	Status    string `json:"run_stop_status,omitempty"`
	Minutes   string `json:"minutes,omitempty"`
	Problems  string `json:"problems,omitempty"`
}

// handoff reads ingest.json of a handoff run, if the record lists it.
func handoffSection(dir string, rec *runs.Record) (*Handoff, []string) {
	recorded := false
	for _, f := range rec.Files {
		recorded = recorded || f.Path == "ingest.json"
	}
	if !recorded {
		return nil, []string{"the run left no ingest.json: no handoff section"}
	}
	b, err := safefile.ReadFile(filepath.Join(dir, "ingest.json"), maxIngestBytes)
	if err != nil {
		return nil, []string{"ingest.json cannot be read: " + err.Error()}
	}
	h, err := parseIngest(b)
	if err != nil {
		return nil, []string{"ingest.json " + err.Error()}
	}
	return h, nil
}

// parseIngest reads a handoff ingest record into its report section.
func parseIngest(b []byte) (*Handoff, error) {
	var in struct {
		Workload  string   `json:"workload"`
		Benchmark string   `json:"benchmark"`
		Ruleset   string   `json:"ruleset"`
		Verdict   string   `json:"verdict"`
		Problems  []string `json:"problems"`
		Preflight []struct {
			File         string `json:"file"`
			Mode         string `json:"mode"`
			Host         string `json:"host"`
			Result       string `json:"result"`
			PinsVerified int    `json:"pins_verified"`
		} `json:"preflight"`
		Runs []struct {
			Index     int      `json:"index"`
			Seed      int64    `json:"seed"`
			Host      string   `json:"host"`
			Compliant bool     `json:"compliant"`
			Status    string   `json:"run_stop_status"`
			Minutes   *float64 `json:"minutes"`
			Problems  []string `json:"problems"`
		} `json:"runs"`
		Score *struct {
			Minutes *float64 `json:"minutes"`
			Note    string   `json:"note"`
		} `json:"score"`
	}
	if err := strictjson.DecodeOpen(b, &in); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	h := &Handoff{Workload: truncate(in.Workload, 40), Benchmark: truncate(in.Benchmark, 40), Ruleset: truncate(in.Ruleset, 40),
		Verdict: truncate(in.Verdict, 40), Problems: []string{}, Preflight: []PreflightRow{}, Runs: []HandoffRunRow{}}
	for _, p := range in.Problems {
		h.Problems = append(h.Problems, truncate(p, 2*maxInputChars))
	}
	for _, p := range in.Preflight {
		h.Preflight = append(h.Preflight, PreflightRow{File: truncate(p.File, maxInputChars), Mode: truncate(p.Mode, 40),
			Host: truncate(p.Host, maxInputChars), Result: truncate(p.Result, 40), PinsVerified: p.PinsVerified})
	}
	for _, r := range in.Runs {
		row := HandoffRunRow{Index: r.Index, Seed: r.Seed, Host: truncate(r.Host, maxInputChars), Compliant: r.Compliant,
			Status: truncate(r.Status, 40), Problems: truncate(strings.Join(r.Problems, "; "), 2*maxInputChars)}
		if r.Minutes != nil {
			row.Minutes = fmt.Sprintf("%.2f", *r.Minutes)
		}
		h.Runs = append(h.Runs, row)
	}
	if in.Score != nil {
		if in.Score.Minutes != nil {
			h.ScoreMinutes = fmt.Sprintf("%.2f", *in.Score.Minutes)
		}
		h.ScoreNote = truncate(in.Score.Note, 2*maxInputChars)
	}
	return h, nil
}

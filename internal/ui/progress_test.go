package ui

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step on every call.
func fakeClock(step time.Duration) func() time.Time {
	at := time.Unix(0, 0)
	return func() time.Time { at = at.Add(step); return at }
}

func TestRateProgressJSONLines(t *testing.T) {
	var out, errb bytes.Buffer
	term := New(&out, &errb, true)
	p := term.RateProgress(fakeClock(300 * time.Millisecond))
	for i := 0; i <= 10; i++ {
		p("scoring", i, 10)
	}
	if out.Len() != 0 {
		t.Errorf("progress went to stdout: %q", out.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) < 2 || len(lines) > 5 {
		t.Fatalf("want a few throttled lines, got %d:\n%s", len(lines), errb.String())
	}
	var last struct {
		Type  string  `json:"message_type"`
		Stage string  `json:"stage"`
		Done  int     `json:"done"`
		Total int     `json:"total"`
		Rate  float64 `json:"per_second"`
		ETA   float64 `json:"eta_seconds"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	// 10 jobs in 3 s after the first count.
	if last.Type != "progress" || last.Stage != "scoring" || last.Done != 10 || last.Total != 10 || last.Rate < 3.3 || last.Rate > 3.4 || last.ETA != 0 {
		t.Errorf("last line %+v", last)
	}
}

func TestProgressLine(t *testing.T) {
	got := progressLine(stageProgress{Stage: "scoring", Done: 5, Total: 20, Rate: 2.5, ETASeconds: 6})
	for _, want := range []string{"[######..................]", "5/20", "2.5 jobs/s", "ETA 6s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

func TestRateProgressSilentWithoutTerminal(t *testing.T) {
	var out, errb bytes.Buffer
	New(&out, &errb, false).RateProgress(nil)("scoring", 1, 2)
	if out.Len()+errb.Len() != 0 {
		t.Errorf("wrote %q %q", out.String(), errb.String())
	}
}

// TestRateProgressVerdicts: the verdicts so far ride on the stage's
// progress lines and status line, the count never goes back, and a count
// that arrives after the last shows the last again with the verdicts
// recorded since.
func TestRateProgressVerdicts(t *testing.T) {
	var out, errb bytes.Buffer
	r := New(&out, &errb, true).NewRate(fakeClock(2 * time.Second))
	r.Count("self-check", 4, 4)
	r.Verdicts("scoring", 1, 0, 5) // a resumed verdict, before the stage's first count
	r.Count("scoring", 1, 4)
	r.Verdicts("scoring", 2, 1, 5)
	r.Count("scoring", 4, 4)
	r.Verdicts("scoring", 3, 2, 5)
	r.Count("scoring", 3, 4)
	type line struct {
		Stage    string    `json:"stage"`
		Done     int       `json:"done"`
		Verdicts *Verdicts `json:"verdicts"`
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var p line
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if len(got) != 4 || got[0].Verdicts != nil {
		t.Fatalf("lines %+v: want 4, the self-check's without verdicts", got)
	}
	last := got[3]
	if last.Done != 4 || last.Verdicts == nil || *last.Verdicts != (Verdicts{Samples: 5, Passed: 3, Failed: 2}) {
		t.Errorf("last line %+v %+v: want done 4 and 3 passed, 2 failed of 5", last, last.Verdicts)
	}
	if v := got[1].Verdicts; v == nil || v.Passed != 1 || v.Samples != 5 {
		t.Errorf("first scoring line lacks the resumed verdict: %+v", v)
	}
	s := progressLine(stageProgress{Stage: "scoring", Done: 3, Total: 8, Rate: 1, ETASeconds: 5, Verdicts: &Verdicts{Samples: 16400, Passed: 120, Failed: 30}})
	if !strings.Contains(s, "samples 150/16400: 120 passed, 30 failed") || len(s) > 100 {
		t.Errorf("status line %q (%d characters)", s, len(s))
	}
}

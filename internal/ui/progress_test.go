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

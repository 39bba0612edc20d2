package mllog

import (
	"strings"
	"testing"
)

func runs(minutes []float64, failing ...int) []*Result {
	out := make([]*Result, len(minutes))
	for i, m := range minutes {
		m := m
		out[i] = &Result{Compliant: true, Minutes: &m}
	}
	for _, i := range failing {
		out[i].Compliant = false
	}
	return out
}

func TestScore(t *testing.T) {
	ten := []float64{7, 3, 9, 1, 5, 10, 2, 8, 4, 6}
	cases := []struct {
		name      string
		bench     string
		runs      []*Result
		want      float64 // 0: no score
		note      string
		dropped   int
		mean      float64
		wantNoMin bool
	}{
		// Without fastest (1) and slowest (10): 2..9, mean 5.5.
		{name: "ten", bench: "minigo", runs: runs(ten), want: 5.5, mean: 5.5},
		// Run with 5 minutes fails: it counts as the slowest, so only the
		// fastest is dropped from the rest: 2,3,4,6,7,8,9,10 -> 6.125.
		{name: "one-failing", bench: "minigo", runs: runs(ten, 4), want: 6.125, dropped: 1, mean: 50.0 / 9},
		{name: "two-failing", bench: "minigo", runs: runs(ten, 4, 7), note: "too many failed runs", dropped: 2, mean: 42.0 / 8},
		{name: "too-few", bench: "minigo", runs: runs(ten[:9]), note: "needs 10 runs of minigo, got 9", mean: 49.0 / 9},
		// DLRM needs 5: 1.2 1.4 1.6 1.8 2.0 -> 1.4 1.6 1.8.
		{name: "dlrm", bench: "dlrm", runs: runs([]float64{2.0, 1.2, 1.6, 1.4, 1.8}), want: 1.6, mean: 1.6},
		{name: "unknown", bench: "bert", runs: runs(ten), note: "no run count", mean: 5.5},
		// A run without a time is dropped like a failing one.
		{name: "no-time", bench: "dlrm", runs: append(runs([]float64{1, 2, 3, 4}), &Result{Compliant: true}), want: 3, dropped: 1, mean: 2.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Score("", c.bench, c.runs)
			if c.want == 0 {
				if s.Minutes != nil || !strings.Contains(s.Note, c.note) {
					t.Errorf("score %v note %q, want none and %q", s.Minutes, s.Note, c.note)
				}
			} else if s.Minutes == nil || *s.Minutes < c.want-1e-12 || *s.Minutes > c.want+1e-12 {
				t.Errorf("score = %v (%s), want %v", s.Minutes, s.Note, c.want)
			}
			if s.Dropped != c.dropped || s.Runs != len(c.runs) {
				t.Errorf("dropped %d runs %d", s.Dropped, s.Runs)
			}
			if s.MeanMinutes == nil || *s.MeanMinutes < c.mean-1e-12 || *s.MeanMinutes > c.mean+1e-12 {
				t.Errorf("mean = %v, want %v", s.MeanMinutes, c.mean)
			}
		})
	}
	if RequiredRuns("2.1.0", "minigo") != 10 || RequiredRuns("2.1.0", "dlrm") != 5 || RequiredRuns("9.9", "dlrm") != 0 {
		t.Errorf("required runs table")
	}
}

// A run_stop dated before run_start gives no time (never a negative one):
// the run is compliant as upstream judges it, but a score drops it.
func TestNegativeTimeNotScored(t *testing.T) {
	minigo, _ := realLogs(t)
	l := readLogText(t, minigo[0])
	l.setTime(l.one("run_stop"), l.timeMS(l.one("run_start"))-1)
	log, err := Parse(strings.NewReader(l.String()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Compliant || r.Minutes != nil || !hasRule(r, "time/negative", SeverityWarning) {
		t.Fatalf("compliant %v minutes %v findings %+v; want compliant, no minutes, a time/negative warning", r.Compliant, r.Minutes, r.Findings)
	}
	runs := make([]*Result, 10)
	for i := range runs {
		runs[i] = r
	}
	if s := Score("", "minigo", runs); s.Minutes != nil || s.Dropped != 10 {
		t.Errorf("score %+v; want every run dropped", s)
	}
}

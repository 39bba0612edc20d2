package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
)

// fastRun is the HumanEval section of a run of n tasks that all ran far
// inside their limits (0.05% to 5% of them) with k samples each.
func fastRun(n, k int) *HumanEval {
	he := &HumanEval{Tasks: n, Samples: n * k, MaxSamples: k, PlusScored: true, ResultsFound: true,
		BasePassAtK: map[string]float64{"pass@1": 0.5}, PlusPassAtK: map[string]float64{"pass@1": 0.4}}
	for i := range n {
		passed := (i * 7) % (k + 1)
		status := map[bool]string{true: "pass", false: "partial"}[passed == k]
		if passed == 0 {
			status = "fail"
		}
		share := 0.0005 * math.Pow(100, float64(i)/float64(max(n-1, 1)))
		row := TaskRow{Task: fmt.Sprintf("HumanEval/%d", i), Samples: k, Passed: passed, BasePassed: passed, Status: status,
			Seconds: share * 4, LimitSeconds: 4}
		if passed > 0 {
			row.PassSeconds, row.PassLimitSeconds, row.PassLimitShare = share*4, 4, share
		}
		he.Rows = append(he.Rows, row)
	}
	return he
}

// TestChartsRead: every chart of a full run has axis titles, ticks and a
// legend; every mark names its task on hover; the grid wraps at 25 tasks;
// a fast run's time chart is on a log scale with its bars visible.
func TestChartsRead(t *testing.T) {
	he := fastRun(164, 5)
	cs := charts(he)
	if len(cs) != 3 {
		t.Fatalf("%d charts, want the grid, the time chart and the pass rate", len(cs))
	}
	for _, c := range cs {
		titles, ticks := 0, 0
		for _, tx := range c.Texts {
			switch tx.Class {
			case "axis-title":
				titles++
			case "tick":
				ticks++
			}
		}
		if titles == 0 || ticks < 3 || len(c.Legend) < 2 || c.Caption == "" {
			t.Errorf("%s: %d axis titles, %d ticks, %d legend entries", c.Title, titles, ticks, len(c.Legend))
		}
		marks := 0
		for _, r := range c.Rects {
			if strings.HasPrefix(r.Title, "HumanEval/") {
				marks++
				if r.H < 2 || r.W < 2 || r.X+r.W > c.Width || r.Y+r.H > c.Height {
					t.Errorf("%s: mark %q is %dx%d at %d,%d in a %dx%d chart", c.Title, r.Title, r.W, r.H, r.X, r.Y, c.Width, c.Height)
				}
			}
		}
		if marks != 164 {
			t.Errorf("%s: %d marks with a task title, want 164", c.Title, marks)
		}
	}
	grid := cs[0]
	rows := map[int]bool{}
	for _, r := range grid.Rects {
		rows[r.Y] = true
	}
	if len(rows) != 7 || grid.Width > 1000 {
		t.Errorf("grid: %d rows, %d pixels wide; want 164 tasks in 7 rows of 25", len(rows), grid.Width)
	}
	var labels []string
	for _, tx := range cs[1].Texts {
		if tx.Class == "tick" && strings.HasSuffix(tx.Text, "%") {
			labels = append(labels, tx.Text)
		}
	}
	if got := strings.Join(labels, " "); got != "0.01% 0.1% 1% 10% 100%" {
		t.Errorf("time chart ticks %q, want a log scale from 0.01%% to the limit", got)
	}
	for _, r := range cs[1].Rects {
		if strings.HasPrefix(r.Title, "HumanEval/") && r.Class == "pass" && r.H < 10 {
			t.Errorf("time chart: bar %q is %d pixels high: a fast run's bars must show", r.Title, r.H)
		}
	}

	// Near the limit the scale is linear and shows the limit line.
	near := fastRun(10, 1)
	for i := range near.Rows {
		near.Rows[i].Seconds = near.Rows[i].LimitSeconds * (0.3 + 0.1*float64(i))
	}
	tc, ok := timeChart(near.Rows)
	if !ok || strings.Contains(tc.Texts[len(tc.Texts)-1].Text+tc.Caption, "log") || len(tc.Lines) != 1 || tc.Lines[0].Class != "limitline" {
		t.Errorf("near the limit: %+v", tc)
	}
	over := 0
	for _, r := range tc.Rects {
		if r.Class == "fail" {
			over++
		}
	}
	if over != 2 { // 110% and 120%
		t.Errorf("%d bars marked over the limit, want 2", over)
	}

	html := render(t, &Report{Schema: Schema, Verified: true, Problems: nil, Run: Run{ID: "humaneval-20260101T000000Z-00000000", Kind: "humaneval"}, HumanEval: he}, "html")
	if n := len(regexp.MustCompile(`<title>HumanEval/163: `).FindAllString(html, -1)); n != 3 {
		t.Errorf("HumanEval/163 is named on hover %d times, want once per chart", n)
	}
	if d := os.Getenv("REPRO_TEST_ARTIFACTS"); d != "" {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "report-charts-164-tasks.html"), []byte(html), 0o644)
	}
}

// TestChartsHundredSamples: with 100 samples per task nearly every task
// has a sample that ran to its limit (an endless loop). The time chart of
// such a run still shows how near each task's passes came to the limit,
// on a readable scale, and counts the samples past it, instead of a wall
// of bars at the top; the pass rate and the grid keep one mark per task.
func TestChartsHundredSamples(t *testing.T) {
	const tasks, k = 164, 100
	fail := codebench.StatusFail
	var rows []TaskRow
	for i := range tasks {
		var entries []codebench.ResultEntry
		for j := range k {
			// Sample 0 loops to its limit; the others pass in 0.1% to 40%
			// of it, varying by task.
			secs, st := 4*(0.001+0.4*float64((i*13+j)%97)/97), codebench.StatusPass
			if j == 0 {
				secs, st = 4.3, codebench.StatusTimeout
			}
			pst := st
			if j == 1 && i%5 == 0 {
				pst = fail
			}
			entries = append(entries, codebench.ResultEntry{TaskID: fmt.Sprintf("HumanEval/%d", i), BaseStatus: st, PlusStatus: &pst,
				BaseClocks: &codebench.PhaseClocks{Run: "job", JobCPU: secs, CPULimit: 4}, PlusClocks: &codebench.PhaseClocks{Run: "job", JobCPU: secs / 2, CPULimit: 4}})
		}
		rows = append(rows, taskRow(fmt.Sprintf("HumanEval/%d", i), entries))
	}
	// Under gVisor the job clock is held at its scale of the limit where
	// the host read the container: a pass past the limit on the job
	// clock alone is within it; past the scaled limit, or past the host's
	// budget, it is not.
	gvisor := func(job, container float64, budget float64) codebench.ResultEntry {
		return codebench.ResultEntry{TaskID: "HumanEval/0", BaseStatus: codebench.StatusPass,
			BaseClocks: &codebench.PhaseClocks{Run: "first", JobCPU: job, CPULimit: 4, ClockScale: 8, ContainerCPU: container, ContainerBudget: budget}}
	}
	// The slowest pass's share is of the limit that holds each clock: the
	// job clock's scaled limit, the container's budget.
	for _, c := range []struct {
		e     codebench.ResultEntry
		over  int
		share float64
	}{
		{gvisor(4.5, 4.2, 5), 0, 0.84},
		{gvisor(4.5, 0.5, 5), 0, 4.5 / 32},
		{gvisor(4.5, 4.2, 0), 1, 4.5 / 4},
		{gvisor(33, 4.2, 5), 1, 33.0 / 32},
		{gvisor(3.9, 5.2, 5), 1, 5.2 / 5},
	} {
		r := taskRow("HumanEval/0", []codebench.ResultEntry{c.e})
		if r.OverLimit != c.over || math.Abs(r.PassShare()-c.share) > 1e-9 || (r.PassShare() > 1) != (c.over > 0) {
			t.Errorf("clocks %+v: %d samples past their limit, slowest pass at %.3f of its limit; want %d, %.3f", *c.e.BaseClocks, r.OverLimit, r.PassShare(), c.over, c.share)
		}
	}
	r := rows[3]
	if r.OverLimit != 1 || r.Samples != k || r.PassShare() <= 0 || r.PassShare() > 0.41 || r.TimeShare() <= 1 {
		t.Fatalf("task row %+v: want 1 sample over its limit and the slowest pass under 41%%", r)
	}
	// pass@1, pass@10 and pass@100 from the verdicts (EvalPlus's
	// estimator): 99 of 100 pass base, 98 or 99 plus.
	v := verdictScores(rows, true)
	wantPlus1 := (33*0.98 + 131*0.99) / 164
	if len(v.BasePassAtK) != 3 || math.Abs(v.BasePassAtK["pass@1"]-0.99) > 1e-9 || v.BasePassAtK["pass@10"] != 1 || v.BasePassAtK["pass@100"] != 1 ||
		math.Abs(v.PlusPassAtK["pass@1"]-wantPlus1) > 1e-9 || v.PlusPassAtK["pass@100"] != 1 {
		t.Errorf("verdict scores base %v plus %v: want pass@1, @10, @100 (plus pass@1 %.4f)", v.BasePassAtK, v.PlusPassAtK, wantPlus1)
	}
	he := &HumanEval{Tasks: tasks, Samples: tasks * k, MaxSamples: k, PlusScored: true, ResultsFound: true, Rows: rows,
		BasePassAtK: v.BasePassAtK, PlusPassAtK: v.PlusPassAtK}
	cs := charts(he)
	if len(cs) != 3 {
		t.Fatalf("%d charts", len(cs))
	}
	tc := cs[1]
	atTop, bars := 0, 0
	for _, rc := range tc.Rects {
		if strings.HasPrefix(rc.Title, "HumanEval/") {
			bars++
			if rc.Y <= plotTop+1 {
				atTop++
			}
			if !strings.Contains(rc.Title, "1 of 100 samples past their limit") {
				t.Errorf("bar %q does not count the samples past the limit", rc.Title)
			}
		}
	}
	if bars != tasks || atTop > 0 {
		t.Errorf("time chart %q: %d bars, %d at the top of the plot; want %d, none at the top", tc.Title, bars, atTop, tasks)
	}
	if !strings.Contains(tc.Caption, "164 of 164 tasks had a sample run past its limit") {
		t.Errorf("caption %q", tc.Caption)
	}
	html := render(t, &Report{Schema: Schema, Verified: true, Run: Run{ID: "humaneval-20260101T000000Z-00000000", Kind: "humaneval"}, HumanEval: he}, "html")
	for _, want := range []string{"base pass@1", "base pass@10", "base pass@100", "plus pass@100", "Slowest passing run per task", "Pass rate per task"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if d := os.Getenv("REPRO_TEST_ARTIFACTS"); d != "" {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "report-charts-100-samples.html"), []byte(html), 0o644)
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 1, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{1, 45, "10 20 30 40"},
		{0.1, 0.6, "0.1 0.2 0.3 0.4 0.5 0.6"},
		{3, 3, "3"},
	} {
		var got []string
		for _, tk := range niceTicks(tc.lo, tc.hi, 5) {
			got = append(got, tk.label)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("niceTicks(%g, %g) = %v, want %s", tc.lo, tc.hi, got, tc.want)
		}
	}
	for v, want := range map[float64]string{1: "100%", 0.25: "25%", 0.01: "1%", 0.001: "0.1%", 0.0001: "0.01%", 0: "0%"} {
		if got := percent(v); got != want {
			t.Errorf("percent(%g) = %q, want %q", v, got, want)
		}
	}
}

package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// maxMLLOGBytes bounds the read of a mllog run's mllog.json.
const maxMLLOGBytes = 64 << 20

// MLLOG is the section of an MLLOG verification run: each log's verdict
// and time to train, each benchmark's olympic score, and the accuracy per
// epoch (MiniGo: per generation) of every log against the target.
type MLLOG struct {
	Ruleset   string       `json:"ruleset"`
	Strict    bool         `json:"strict"`
	Compliant bool         `json:"compliant"`
	Logs      []MLLOGLog   `json:"logs"`
	Scores    []MLLOGScore `json:"scores"`
	Charts    []Chart      `json:"-"`
}

// MLLOGLog is one verified log.
type MLLOGLog struct {
	File      string `json:"file"`
	Benchmark string `json:"benchmark"`
	Compliant bool   `json:"compliant"`
	Status    string `json:"run_stop_status,omitempty"`
	Minutes   string `json:"minutes,omitempty"`
	Target    string `json:"target,omitempty"`
	// Evals counts the eval_accuracy records; Reached is the first epoch
	// whose accuracy met the target ("" when none did), Last the last
	// accuracy.
	Evals   int    `json:"evals"`
	Reached string `json:"reached_at_epoch,omitempty"`
	Last    string `json:"last_accuracy,omitempty"`
	Errors  string `json:"errors,omitempty"`
}

// MLLOGScore is a benchmark's score over the verified logs.
type MLLOGScore struct {
	Benchmark    string `json:"benchmark"`
	Runs         int    `json:"runs"`
	RequiredRuns int    `json:"required_runs"`
	Dropped      int    `json:"dropped"`
	Minutes      string `json:"minutes,omitempty"`
	Note         string `json:"note,omitempty"`
}

func mllogSection(dir string, rec *runs.Record) (*MLLOG, []string) {
	recorded := false
	for _, f := range rec.Files {
		recorded = recorded || f.Path == "mllog.json"
	}
	if !recorded {
		return nil, []string{"the run left no mllog.json: no MLLOG section"}
	}
	b, err := safefile.ReadFile(filepath.Join(dir, "mllog.json"), maxMLLOGBytes)
	if err != nil {
		return nil, []string{"mllog.json cannot be read: " + err.Error()}
	}
	m, err := parseMLLOG(b)
	if err != nil {
		return nil, []string{"mllog.json " + err.Error()}
	}
	return m, nil
}

// maxMLLOGLogs bounds the logs a report lists.
const maxMLLOGLogs = 10000

// parseMLLOG reads a mllog run's report (untrusted: it is shown even when
// the run does not verify) into the section, bounding the logs listed and
// the points drawn per log.
func parseMLLOG(b []byte) (*MLLOG, error) {
	var rep mllog.Report
	if err := strictjson.DecodeOpen(b, &rep); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %s", truncate(err.Error(), maxInputChars))
	}
	if len(rep.Files) > maxMLLOGLogs {
		rep.Files = rep.Files[:maxMLLOGLogs]
	}
	for _, r := range rep.Files {
		if r != nil && len(r.Accuracy) > mllog.MaxAccuracyPoints {
			r.Accuracy = r.Accuracy[:mllog.MaxAccuracyPoints]
		}
	}
	m := &MLLOG{Ruleset: truncate(rep.Ruleset, 20), Strict: rep.Strict, Compliant: rep.Compliant, Logs: []MLLOGLog{}, Scores: []MLLOGScore{}}
	for _, r := range rep.Files {
		if r == nil {
			continue
		}
		l := MLLOGLog{File: truncate(r.File, maxInputChars), Benchmark: truncate(r.Benchmark, 40), Compliant: r.Compliant,
			Status: truncate(r.Status, 40), Target: truncate(r.Target, 60), Evals: len(r.Accuracy) + r.AccuracyDropped}
		if r.Minutes != nil {
			l.Minutes = fmt.Sprintf("%.4f", *r.Minutes)
		}
		for _, p := range r.Accuracy {
			if p.Reached && l.Reached == "" {
				l.Reached = epoch(p)
			}
		}
		if n := len(r.Accuracy); n > 0 {
			l.Last = fmt.Sprintf("%.4f", r.Accuracy[n-1].Value)
		}
		var errs []string
		for _, f := range r.Errors() {
			errs = append(errs, f.Message)
			if len(errs) == 3 {
				break
			}
		}
		l.Errors = truncate(strings.Join(errs, "; "), maxInputChars)
		m.Logs = append(m.Logs, l)
	}
	for _, s := range rep.Scores {
		sc := MLLOGScore{Benchmark: truncate(s.Benchmark, 40), Runs: s.Runs, RequiredRuns: s.RequiredRuns, Dropped: s.Dropped, Note: truncate(s.Note, maxInputChars)}
		if s.Minutes != nil {
			sc.Minutes = fmt.Sprintf("%.4f", *s.Minutes)
		}
		m.Scores = append(m.Scores, sc)
	}
	m.Charts = accuracyCharts(rep.Files)
	return m, nil
}

func epoch(p mllog.AccuracyPoint) string {
	if p.Epoch == nil {
		return fmt.Sprintf("line %d", p.Line)
	}
	return fmt.Sprintf("%g", *p.Epoch)
}

const (
	accW = 600
	accH = 200
	// maxChartLogs bounds the logs drawn in one accuracy chart.
	maxChartLogs = 50
)

// accuracyCharts draws, per benchmark, the accuracy of every log against
// its epoch (the record's index where a record has no epoch), one line
// per log, with the target as a horizontal line.
func accuracyCharts(files []*mllog.Result) []Chart {
	byBench := map[string][]*mllog.Result{}
	for _, r := range files {
		if r != nil && len(r.Accuracy) > 0 && len(byBench[r.Benchmark]) < maxChartLogs {
			byBench[r.Benchmark] = append(byBench[r.Benchmark], r)
		}
	}
	names := make([]string, 0, len(byBench))
	for b := range byBench {
		names = append(names, b)
	}
	sort.Strings(names)
	var out []Chart
	for _, b := range names {
		logs := byBench[b]
		x := func(i int, p mllog.AccuracyPoint) float64 {
			if p.Epoch != nil {
				return *p.Epoch
			}
			return float64(i)
		}
		minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		var target *float64
		for _, r := range logs {
			if r.TargetValue != nil {
				target = r.TargetValue
				minY, maxY = min(minY, *target), max(maxY, *target)
			}
			for i, p := range r.Accuracy {
				minX, maxX = min(minX, x(i, p)), max(maxX, x(i, p))
				minY, maxY = min(minY, p.Value), max(maxY, p.Value)
			}
		}
		if maxX == minX {
			maxX = minX + 1
		}
		if maxY == minY {
			maxY = minY + 1
		}
		sc := scale{lo: minY, hi: maxY, px: accH}
		px := func(v float64) int { return plotLeft + int((v-minX)/(maxX-minX)*accW) }
		py := func(v float64) int { return plotTop + sc.y(v) }
		c := Chart{Title: "Accuracy per epoch: " + truncate(b, 40), Width: plotLeft + accW + plotRight, Height: plotTop + accH + plotBottom,
			Caption: fmt.Sprintf("one line per log: eval_accuracy (%.4g to %.4g) against epoch_num (%g to %g); hover a line for its log", minY, maxY, minX, maxX)}
		yAxis(&c, sc, niceTicks(minY, maxY, 5), accW, "eval_accuracy")
		for _, t := range niceTicks(minX, maxX, 8) {
			c.Texts = append(c.Texts, Text{X: px(t.v), Y: plotTop + accH + 14, Anchor: "middle", Class: "tick", Text: t.label})
		}
		c.Texts = append(c.Texts, Text{X: plotLeft + accW/2, Y: plotTop + accH + 32, Anchor: "middle", Class: "axis-title", Text: "epoch (epoch_num)"})
		ok, bad := 0, 0
		for _, r := range logs {
			var pts [][2]int
			for i, p := range r.Accuracy {
				pts = append(pts, [2]int{px(x(i, p)), py(p.Value)})
			}
			cls := "acc-ok"
			if !r.Compliant {
				cls = "acc-fail"
				bad++
			} else {
				ok++
			}
			c.Lines = append(c.Lines, Line{Points: points(pts), Class: cls, Title: truncate(filepath.Base(r.File), maxInputChars)})
		}
		c.Legend = []LegendItem{{Class: "acc-ok", Label: count("compliant log", ok), Line: true}, {Class: "acc-fail", Label: count("log not compliant", bad), Line: true}}
		if target != nil {
			c.Lines = append(c.Lines, Line{Points: points([][2]int{{plotLeft, py(*target)}, {plotLeft + accW, py(*target)}}), Class: "limitline", Title: "quality target " + logs[0].Target})
			c.Legend = append(c.Legend, LegendItem{Class: "limitline", Label: "quality target " + logs[0].Target, Line: true})
		}
		out = append(out, c)
	}
	return out
}

package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	ttemplate "text/template"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/ui"
)

//go:embed templates/report.html.tmpl templates/report.md.tmpl templates/chart.html.tmpl templates/board.html.tmpl
var templates embed.FS

// Formats are the output formats of Write.
var Formats = []string{"html", "md", "json"}

var funcs = map[string]any{
	"pct":    func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"ratio":  func(f float64) string { return fmt.Sprintf("%.4f", f) },
	"secs":   func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"keys":   sortedKeys,
	"bytes":  func(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) },
	"md":     mdText,
	"time":   func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04:05Z07:00") },
	"charts": charts,
	"near":   nearLimitRows,
	"short":  shortDigest,
	"rowOf":  func(p boardPage, r BoardRow) boardRowView { return boardRowView{Page: p, Row: r} },
	"kOf":    kOf,
	"orderOf": func(desc bool) string {
		if desc {
			return "desc"
		}
		return "asc"
	},
	"date": func(t interface{ Format(string) string }) string { return t.Format("2006-01-02") },
}

var (
	htmlTmpl  = template.Must(template.New("report.html.tmpl").Funcs(funcs).ParseFS(templates, "templates/report.html.tmpl", "templates/chart.html.tmpl"))
	boardTmpl = template.Must(template.New("board.html.tmpl").Funcs(funcs).ParseFS(templates, "templates/board.html.tmpl", "templates/chart.html.tmpl"))
	mdTmpl    = ttemplate.Must(ttemplate.New("report.md.tmpl").Funcs(funcs).ParseFS(templates, "templates/report.md.tmpl"))
)

// CheckFormat returns a usage error unless format is one of Formats.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return exitcode.Errorf(exitcode.Usage, "unknown report format %q (one of %s)", format, strings.Join(Formats, ", "))
	}
	return nil
}

// Write renders rep in format ("html", "md" or "json") to w.
func Write(w io.Writer, rep *Report, format string) error {
	var buf bytes.Buffer
	var err error
	switch format {
	case "html":
		err = htmlTmpl.Execute(&buf, outsideTextEscaped(rep))
	case "md":
		err = mdTmpl.Execute(&buf, outsideTextEscaped(rep))
	case "json":
		var b []byte
		b, err = json.MarshalIndent(rep, "", "  ")
		buf.Write(b)
		buf.WriteByte('\n')
	default:
		return CheckFormat(format)
	}
	if err != nil {
		return fmt.Errorf("failed to render the %s report: %w", format, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// outsideTextEscaped returns a copy of rep whose every string has been
// through ui.OneLine, for the formats people read: html/template escapes
// markup but leaves control and bidirectional characters as they are,
// which can drive a terminal the report is printed on or reorder what a
// browser shows. The JSON report keeps exact values.
func outsideTextEscaped(rep *Report) *Report {
	return escapedCopy(reflect.ValueOf(rep)).Interface().(*Report)
}

func escapedCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(ui.OneLine(v.String())).Convert(v.Type())
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(escapedCopy(v.Elem()))
		return p
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v) // unexported fields (a time's) as they are
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(escapedCopy(v.Field(i)))
			}
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(escapedCopy(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(escapedCopy(it.Key()), escapedCopy(it.Value()))
		}
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(escapedCopy(v.Elem()))
		return c
	}
	return v
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) < len(keys[j]) // pass@1 before pass@10
		}
		return keys[i] < keys[j]
	})
	return keys
}

// mdText makes untrusted text safe in a Markdown table cell: no line
// breaks, no cell separators, no code spans, no HTML.
func mdText(s string) string {
	r := strings.NewReplacer(
		"&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "\\|", "`", "\\`",
		"\n", " ", "\r", " ", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]",
	)
	return r.Replace(s)
}

const (
	gridCell    = 26 // pixels per task of the pass/fail grid, with the gap
	gridRowH    = 20
	gridPerLine = 25
	gridLeft    = 64 // room for the row labels
	barPlotH    = 160
)

// charts draws the charts of a HumanEval section: pass/fail across tasks,
// time against each task's limit and, with more than one sample per task,
// the pass rate per task.
func charts(he *HumanEval) []Chart {
	if he == nil || len(he.Rows) == 0 {
		return nil
	}
	out := []Chart{taskGrid(he.Rows)}
	timeChart := timeChart
	if he.MaxSamples > 1 {
		timeChart = passTimeChart
	}
	if t, ok := timeChart(he.Rows); ok {
		out = append(out, t)
	}
	if he.MaxSamples > 1 {
		bars := make([]bar, len(he.Rows))
		for i, r := range he.Rows {
			bars[i] = bar{task: r.Task, value: r.PassRate(), class: r.Status, title: fmt.Sprintf("%s: %d of %d samples passed", r.Task, r.Passed, r.Samples)}
		}
		sc := scale{lo: 0, hi: 1, px: barPlotH}
		rate := barChart("Pass rate per task", "samples passed", bars, sc, []tick{{0, "0%"}, {0.5, "50%"}, {1, "100%"}})
		rate.Legend = statusLegend(he.Rows)
		rate.Caption = "one bar per task: the share of its samples that passed (base and, where scored, plus)"
		out = append(out, rate)
	}
	return out
}

// statusLegend is the legend of the task statuses, with their counts.
func statusLegend(rows []TaskRow) []LegendItem {
	n := map[string]int{}
	for _, r := range rows {
		n[r.Status]++
	}
	return []LegendItem{{Class: "pass", Label: count("every sample passed", n["pass"])},
		{Class: "partial", Label: count("some passed", n["partial"])}, {Class: "fail", Label: count("none passed", n["fail"])}}
}

// taskGrid draws one square per task, in task order, gridPerLine to a row,
// each with its task number and its full id and status on hover; each
// row is labelled with the numbers of its first and last task.
func taskGrid(rows []TaskRow) Chart {
	lines := (len(rows) + gridPerLine - 1) / gridPerLine
	c := Chart{Title: "Pass/fail across tasks", Width: gridLeft + min(len(rows), gridPerLine)*gridCell, Height: 16 + lines*gridRowH,
		Legend:  statusLegend(rows),
		Caption: fmt.Sprintf("one square per task, %d to a row in task order, marked with its number; hover for the id and the samples that passed", gridPerLine)}
	c.Texts = append(c.Texts, Text{X: 2, Y: 11, Anchor: "start", Class: "axis-title", Text: "tasks"})
	for i, r := range rows {
		x, y := gridLeft+(i%gridPerLine)*gridCell, 16+(i/gridPerLine)*gridRowH
		if i%gridPerLine == 0 {
			last := rows[min(i+gridPerLine, len(rows))-1].Task
			c.Texts = append(c.Texts, Text{X: gridLeft - 6, Y: y + 13, Anchor: "end", Class: "tick", Text: taskNumber(r.Task) + "–" + taskNumber(last)})
		}
		c.Rects = append(c.Rects, Rect{X: x, Y: y, W: gridCell - 2, H: gridRowH - 2, Class: r.Status,
			Title: fmt.Sprintf("%s: %s, %d of %d samples passed", r.Task, r.Status, r.Passed, r.Samples)})
		c.Texts = append(c.Texts, Text{X: x + (gridCell-2)/2, Y: y + 13, Anchor: "middle", Class: "cellnum " + r.Status, Text: taskNumber(r.Task)})
	}
	return c
}

// timeChart draws, for every task whose results record it, the time of its
// phase run closest to its limit as a share of that limit: one bar per
// task, the limit a dashed line, on a log scale where the shares span
// decades (see shareScale), so a fast run still shows its bars.
func timeChart(rows []TaskRow) (Chart, bool) {
	var bars []bar
	var shares []float64
	over := 0
	for _, r := range limitedRows(rows) {
		cls := "pass"
		if r.TimeShare() > 1 {
			cls = "fail"
			over++
		}
		shares = append(shares, r.TimeShare())
		bars = append(bars, bar{task: r.Task, value: r.TimeShare(), class: cls,
			title: fmt.Sprintf("%s: %.2f s (%s) of its %.2f s CPU limit (%s)", r.Task, r.Seconds, r.SecondsClock, r.LimitSeconds, percent(r.TimeShare()))})
	}
	if len(bars) == 0 {
		return Chart{}, false
	}
	c := limitChart("Time per task against its limit", "time / limit",
		"one bar per task: the time of its phase run closest to its limit, as the supervisor measured it, as a share of that limit; the dashed line is the limit",
		bars, shares, []LegendItem{{Class: "pass", Label: count("within its limit", len(bars)-over)}, {Class: "fail", Label: count("over its limit", over)}})
	return c, true
}

// passTimeChart is timeChart for tasks with many samples. There nearly
// every task has a sample that ran to its limit (an endless loop), so the
// run closest to its limit says little and every bar would stand at the
// top; instead each bar is the passing run that came closest to its limit
// (how near a slower machine is to another verdict), and the hover and
// caption count the samples and tasks that ran past their limit.
func passTimeChart(rows []TaskRow) (Chart, bool) {
	var bars []bar
	var shares []float64
	struck := 0
	for _, r := range limitedRows(rows) {
		if r.OverLimit > 0 {
			struck++
		}
		over := fmt.Sprintf("%d of %d samples past their limit", r.OverLimit, r.Samples)
		if r.PassLimitSeconds <= 0 {
			bars = append(bars, bar{task: r.Task, value: 0, class: "fail", title: fmt.Sprintf("%s: no sample passed; %s", r.Task, over)})
			continue
		}
		shares = append(shares, r.PassShare())
		bars = append(bars, bar{task: r.Task, value: r.PassShare(), class: "pass",
			title: fmt.Sprintf("%s: slowest pass at %s of its limit (%.2f s of CPU time, limit %.2f s); %s", r.Task, percent(r.PassShare()), r.PassSeconds, r.PassLimitSeconds, over)})
	}
	if len(bars) == 0 {
		return Chart{}, false
	}
	c := limitChart("Slowest passing run per task against its limit", "slowest pass / limit",
		"one bar per task: of its samples' runs that passed, the one closest to its limit, as a share of that limit (a fail bar at 0: no sample passed); the dashed line is the limit",
		bars, shares, []LegendItem{{Class: "pass", Label: count("slowest pass", len(shares))}, {Class: "fail", Label: count("no sample passed", len(bars)-len(shares))}})
	c.Caption += fmt.Sprintf("; %d of %d tasks had a sample run past its limit (hover a bar for its count)", struck, len(bars))
	return c, true
}

// limitChart draws bars whose values are shares of a time limit, scaled by
// shareScale from shares (the values to fit, which may leave out bars drawn
// at 0), with the limit (a share of 1) as a dashed line. Where the scale is
// logarithmic it says so in yTitle and caption. The legend is legend
// followed by the limit line's entry.
func limitChart(title, yTitle, caption string, bars []bar, shares []float64, legend []LegendItem) Chart {
	sc, ticks := shareScale(shares, barPlotH)
	if sc.log {
		yTitle += " (log scale)"
		caption += "; log scale, since the times span decades"
	}
	c := barChart(title, yTitle, bars, sc, ticks)
	y := plotTop + sc.y(1)
	c.Lines = append(c.Lines, Line{Points: points([][2]int{{plotLeft, y}, {c.Width - plotRight, y}}), Class: "limitline", Title: "the limit"})
	c.Legend = append(legend, LegendItem{Class: "limitline", Label: "limit", Line: true})
	c.Caption = caption
	return c
}

// limitedRows are the rows whose results record their time limit.
func limitedRows(rows []TaskRow) []TaskRow {
	var out []TaskRow
	for _, r := range rows {
		if r.LimitSeconds > 0 {
			out = append(out, r)
		}
	}
	return out
}

// nearLimitRows are the rows whose verdict depends on the time limit.
func nearLimitRows(rows []TaskRow) []TaskRow {
	var out []TaskRow
	for _, r := range rows {
		if r.NearLimit != "" {
			out = append(out, r)
		}
	}
	return out
}

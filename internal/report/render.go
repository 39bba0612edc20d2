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

//go:embed templates/report.html.tmpl templates/report.md.tmpl
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
}

var (
	htmlTmpl = template.Must(template.New("report.html.tmpl").Funcs(funcs).ParseFS(templates, "templates/report.html.tmpl"))
	mdTmpl   = ttemplate.Must(ttemplate.New("report.md.tmpl").Funcs(funcs).ParseFS(templates, "templates/report.md.tmpl"))
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

// Rect is one mark of an inline SVG chart.
type Rect struct {
	X, Y, W, H int
	Class      string
	Title      string
}

// Line is a polyline of an inline SVG chart; Points is "x,y x,y ...".
type Line struct {
	Points string
	Class  string
	Title  string
}

// Chart is an inline SVG chart, drawn as rectangles and lines.
type Chart struct {
	Title         string
	Width, Height int
	Rects         []Rect
	Lines         []Line
	Caption       string
}

const (
	cell    = 12
	perLine = 50
	barW    = 8
	barH    = 100
)

// charts draws the charts of a HumanEval section: pass/fail across tasks
// and, with more than one sample per task, the pass rate per task.
func charts(he *HumanEval) []Chart {
	if he == nil || len(he.Rows) == 0 {
		return nil
	}
	grid := Chart{Title: "Pass/fail across tasks", Caption: "one square per task, in task order: pass, partial, fail"}
	for i, r := range he.Rows {
		x, y := (i%perLine)*cell, (i/perLine)*cell
		grid.Rects = append(grid.Rects, Rect{X: x, Y: y, W: cell - 2, H: cell - 2, Class: r.Status, Title: r.Task + ": " + r.Status})
	}
	grid.Width = min(len(he.Rows), perLine) * cell
	grid.Height = ((len(he.Rows) + perLine - 1) / perLine) * cell
	out := []Chart{grid}
	if t, ok := timeChart(he.Rows); ok {
		out = append(out, t)
	}
	if he.MaxSamples > 1 {
		rate := Chart{Title: "Pass rate per task", Caption: "bar height: share of the task's samples that passed", Width: len(he.Rows) * (barW + 2), Height: barH}
		for i, r := range he.Rows {
			h := int(r.PassRate()*barH + 0.5)
			rate.Rects = append(rate.Rects, Rect{X: i * (barW + 2), Y: barH - h, W: barW, H: h, Class: r.Status,
				Title: fmt.Sprintf("%s: %d/%d passed", r.Task, r.Passed, r.Samples)})
		}
		out = append(out, rate)
	}
	return out
}

const (
	timeW    = 300 // pixels for the limit
	timeRowH = 10
)

// timeChart draws, for every task whose results record it, the time of its
// slowest phase run against that run's limit: one bar per task, the limit
// a line at timeW pixels, bars cut at 1.5 × the limit.
func timeChart(rows []TaskRow) (Chart, bool) {
	c := Chart{Title: "Time per task against its limit", Width: timeW*3/2 + 2,
		Caption: "one bar per task: the seconds of its phase run closest to its limit, as the supervisor measured them; the line is the limit"}
	n := 0
	for _, r := range rows {
		if r.LimitSeconds <= 0 {
			continue
		}
		w := int(min(r.TimeShare(), 1.5)*timeW + 0.5)
		cls := "pass"
		if r.TimeShare() > 1 {
			cls = "fail"
		}
		c.Rects = append(c.Rects, Rect{X: 0, Y: n * timeRowH, W: max(w, 1), H: timeRowH - 2, Class: cls,
			Title: fmt.Sprintf("%s: %.2f s of %.2f s", r.Task, r.Seconds, r.LimitSeconds)})
		n++
	}
	if n == 0 {
		return Chart{}, false
	}
	c.Height = n * timeRowH
	c.Rects = append(c.Rects, Rect{X: timeW, Y: 0, W: 1, H: c.Height, Class: "limit", Title: "limit"})
	return c, true
}

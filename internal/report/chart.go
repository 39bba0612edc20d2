package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

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

// Text is a label of an inline SVG chart: a tick, an axis title, a number
// in a cell. Anchor is the SVG text-anchor (start, middle, end).
type Text struct {
	X, Y   int
	Anchor string
	Class  string
	Text   string
}

// LegendItem is one entry of a chart's legend: a swatch of Class (a line
// when Line is set) and what it stands for.
type LegendItem struct {
	Class string
	Label string
	Line  bool
}

// Chart is an inline SVG chart, drawn as rectangles, lines and labels,
// with its legend and a caption shown below it.
type Chart struct {
	Title         string
	Width, Height int
	Rects         []Rect
	Lines         []Line
	Texts         []Text
	Legend        []LegendItem
	Caption       string
}

// Margins of a plot with axes: room for the y tick labels on the left and
// the x tick labels and axis title below.
const (
	plotLeft   = 58
	plotTop    = 24
	plotBottom = 40
	plotRight  = 12
)

// scale maps values to pixels of a plot of height px, linear from 0 or
// logarithmic from lo, up to hi.
type scale struct {
	log    bool
	lo, hi float64
	px     int
}

// y is the pixel row of v, 0 at the top of the plot; values outside the
// scale are drawn at its ends.
func (s scale) y(v float64) int {
	f := 0.0
	switch {
	case s.log && v > 0:
		f = (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	case !s.log && s.hi > s.lo:
		f = (v - s.lo) / (s.hi - s.lo)
	}
	f = min(max(f, 0), 1)
	return s.px - int(f*float64(s.px)+0.5)
}

// tick is one labelled value of an axis.
type tick struct {
	v     float64
	label string
}

// shareScale chooses the scale of times as shares of their limits: linear
// from 0 to the limit (or the largest share, at most 1.5 × the limit)
// unless the shares span a decade or more below that top, then
// logarithmic from the decade below the smallest share. It returns the
// scale and its ticks, in percent of the limit.
func shareScale(shares []float64, px int) (scale, []tick) {
	top, least := 1.0, math.Inf(1)
	for _, s := range shares {
		top = max(top, min(s, 1.5))
		if s > 0 {
			least = min(least, s)
		}
	}
	if math.IsInf(least, 1) || top/least < 10 {
		sc := scale{lo: 0, hi: top, px: px}
		var ticks []tick
		for v := 0.0; v <= top+1e-9; v += 0.25 {
			ticks = append(ticks, tick{v, percent(v)})
		}
		return sc, ticks
	}
	lo := math.Pow(10, math.Floor(math.Log10(max(least, 1e-5))))
	sc := scale{log: true, lo: lo, hi: top, px: px}
	var ticks []tick
	for v := lo; v <= top*1.0001; v *= 10 {
		ticks = append(ticks, tick{v, percent(v)})
	}
	return sc, ticks
}

// percent writes a share as a percentage with the digits it needs: 100%,
// 25%, 1%, 0.1%, 0.01%.
func percent(v float64) string {
	p := v * 100
	if p >= 1 || p == 0 {
		return strconv.FormatFloat(math.Round(p), 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', -1, 64) + "%"
}

// niceTicks returns about n round values (steps of 1, 2 or 5 times a power
// of ten) from lo to hi, labelled with the digits their step needs.
func niceTicks(lo, hi float64, n int) []tick {
	if !(hi > lo) || n < 1 {
		return []tick{{lo, strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	digits := max(0, -int(math.Floor(math.Log10(step))))
	var out []tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, tick{v, strconv.FormatFloat(v, 'f', digits, 64)})
	}
	return out
}

// bar is one bar of a bar chart over tasks.
type bar struct {
	task  string // the task id, for the x axis
	value float64
	class string
	title string
}

// barChart draws one vertical bar per task on scale sc, with the y axis
// labelled by ticks and titled yTitle, the x axis by task numbers, and the
// plot about 640 pixels wide (3 to 28 pixels a bar). A bar is at least 2
// pixels high, so a task at 0 still shows its colour.
func barChart(title, yTitle string, bars []bar, sc scale, ticks []tick) Chart {
	slot := min(max(640/max(len(bars), 1), 3), 28)
	plotW := max(len(bars)*slot, 160)
	c := Chart{Title: title, Width: plotLeft + plotW + plotRight, Height: plotTop + sc.px + plotBottom}
	yAxis(&c, sc, ticks, plotW, yTitle)
	for i, b := range bars {
		top := min(sc.y(b.value), sc.px-2)
		c.Rects = append(c.Rects, Rect{X: plotLeft + i*slot, Y: plotTop + top, W: max(slot-1, 2), H: sc.px - top, Class: b.class, Title: b.title})
	}
	xTaskAxis(&c, bars, slot, plotTop+sc.px)
	return c
}

// yAxis draws the y axis of a plot of width plotW: a line, gridlines and
// labels at ticks, and the axis title above the tick labels.
func yAxis(c *Chart, sc scale, ticks []tick, plotW int, title string) {
	c.Rects = append(c.Rects, Rect{X: plotLeft - 1, Y: plotTop, W: 1, H: sc.px + 1, Class: "axis"},
		Rect{X: plotLeft - 1, Y: plotTop + sc.px, W: plotW + 1, H: 1, Class: "axis"})
	for _, t := range ticks {
		y := plotTop + sc.y(t.v)
		c.Rects = append(c.Rects, Rect{X: plotLeft, Y: y, W: plotW, H: 1, Class: "grid"})
		c.Texts = append(c.Texts, Text{X: plotLeft - 5, Y: y + 4, Anchor: "end", Class: "tick", Text: t.label})
	}
	c.Texts = append(c.Texts, Text{X: 2, Y: plotTop - 12, Anchor: "start", Class: "axis-title", Text: title})
}

// xTaskAxis labels bars with their task numbers, as many as fit 28 pixels
// apart, under the baseline at y, with the axis title "task".
func xTaskAxis(c *Chart, bars []bar, slot, y int) {
	every := max(1, (28+slot-1)/slot)
	for i, b := range bars {
		if i%every == 0 {
			c.Texts = append(c.Texts, Text{X: plotLeft + i*slot + slot/2, Y: y + 14, Anchor: "middle", Class: "tick", Text: taskNumber(b.task)})
		}
	}
	c.Texts = append(c.Texts, Text{X: plotLeft + (c.Width-plotLeft-plotRight)/2, Y: y + 32, Anchor: "middle", Class: "axis-title", Text: "task (in task order)"})
}

// taskNumber is the number of a task id (12 of HumanEval/12), or the id
// itself, cut short, when it has none.
func taskNumber(id string) string {
	if _, n := splitTask(id); n >= 0 {
		return strconv.Itoa(n)
	}
	return truncate(id, 6)
}

// count formats "label (n)" for a legend.
func count(label string, n int) string { return fmt.Sprintf("%s (%d)", label, n) }

// points joins pixel coordinates as an SVG points attribute.
func points(xy [][2]int) string {
	parts := make([]string, len(xy))
	for i, p := range xy {
		parts[i] = fmt.Sprintf("%d,%d", p[0], p[1])
	}
	return strings.Join(parts, " ")
}

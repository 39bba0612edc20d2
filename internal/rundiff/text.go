package rundiff

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/ui"
)

// WriteText writes d for people: both runs with their verified mark, the
// score side by side, the flipped tasks with each side's failing input,
// then the summary values and provenance fields that differ. Untrusted
// text (task ids, inputs, reasons, field values) is quoted so it cannot
// forge lines or terminal escapes.
func (d *Diff) WriteText(w io.Writer) {
	for _, s := range []struct {
		name string
		side Side
	}{{"A", d.A}, {"B", d.B}} {
		mark := "verified"
		if !s.side.Verified {
			mark = "NOT verified"
		}
		engine := ""
		if s.side.Kind == "humaneval" {
			engine = ", engine " + quote(orNotRecorded(s.side.Engine))
		}
		ui.Fprintf(w, "%s %s (%s, status %s, %s%s)\n", s.name, s.side.ID, s.side.Kind, s.side.Status, mark, engine)
		for _, p := range s.side.Problems {
			ui.Fprintf(w, "  problem: %s\n", quote(strings.TrimPrefix(p.Path+": "+p.What, ": ")))
		}
	}
	if len(d.Score) > 0 {
		ui.Fprintf(w, "\nscore\n")
		for _, v := range d.Score {
			ui.Fprintf(w, "  %-14s A %-8s B %s\n", v.Key, orNone(v.A), orNone(v.B))
		}
	}
	if d.Tasks > 0 {
		ui.Fprintf(w, "\ntasks that changed verdict: %d of %d\n", len(d.Flipped), d.Tasks)
		for _, f := range d.Flipped {
			ui.Fprintf(w, "  %s: %s -> %s\n", quote(f.Task), describe(f.A), describe(f.B))
			for _, s := range []struct {
				name string
				v    Verdict
			}{{"A", f.A}, {"B", f.B}} {
				if s.v.Phase != "" {
					ui.Fprintf(w, "    %s failing %s input %s: %s\n", s.name, s.v.Phase, quote(s.v.FailingInput), quote(s.v.Reason))
				}
			}
		}
	}
	list := func(title string, vs []Value) {
		if len(vs) == 0 {
			ui.Fprintf(w, "\n%s: none\n", title)
			return
		}
		ui.Fprintf(w, "\n%s: %d\n", title, len(vs))
		for _, v := range vs {
			key := v.Key
			if v.Section != "" {
				key = v.Section + " " + key
			}
			ui.Fprintf(w, "  %s\n    A %s\n    B %s\n", quote(key), quote(v.A), quote(v.B))
		}
	}
	if len(d.Summary) > 0 {
		list("summary values that differ", d.Summary)
	}
	list("provenance fields that differ", d.Provenance)
}

func describe(v Verdict) string {
	if v.Status == "absent" {
		return "absent"
	}
	return fmt.Sprintf("%s (%d/%d)", v.Status, v.Passed, v.Samples)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quote writes untrusted text as a Go string literal when it holds
// anything but printable characters without quotes or backslashes, and as
// it is otherwise.
func quote(s string) string {
	if s == "" {
		return "-"
	}
	if q := strconv.Quote(s); q != `"`+s+`"` {
		return q
	}
	return s
}

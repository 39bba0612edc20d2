package pickle

import (
	"fmt"
	"io"
	"strings"

	"github.com/reprolab/repro/internal/ui"
)

// WriteText writes the report for people; name is the scanned file as the
// user gave it, printed quoted.
func (r *Report) WriteText(w io.Writer, name string) {
	format := r.Format
	if format == "" {
		format = "unknown"
	}
	ui.Fprintf(w, "file       %q\n", name)
	ui.Fprintf(w, "size       %s (%d bytes)\n", DecimalBytes(r.Size), r.Size)
	ui.Fprintf(w, "sha256     %s\n", r.SHA256.Hex())
	ui.Fprintf(w, "format     %s, pickle protocol %d\n", format, r.Protocol)
	ui.Fprintf(w, "profile    %s\n", r.Profile)
	ui.Fprintf(w, "verdict    %s\n", strings.ToUpper(string(r.Verdict)))
	if r.Error != "" {
		ui.Fprintf(w, "error      %s\n", r.Error)
	}
	if len(r.Violations) > 0 {
		ui.Fprintf(w, "\nviolations (%d)\n", len(r.Violations))
		for _, v := range r.Violations {
			if v.Offset >= 0 {
				ui.Fprintf(w, "  @%-10d %s\n", v.Offset, v.Reason)
			} else {
				ui.Fprintf(w, "  %-11s %s\n", "", v.Reason)
			}
		}
	}
	opcodes := func(title string, ops []OpcodeCount) {
		if len(ops) == 0 {
			return
		}
		ui.Fprintf(w, "\n%s\n", title)
		var line strings.Builder
		for i, o := range ops {
			item := fmt.Sprintf("%s %d", o.Name, o.Count)
			if line.Len() > 0 && line.Len()+len(item)+2 > 76 {
				ui.Fprintf(w, "  %s\n", line.String())
				line.Reset()
			}
			if line.Len() > 0 {
				line.WriteString(", ")
			}
			line.WriteString(item)
			if i == len(ops)-1 {
				ui.Fprintf(w, "  %s\n", line.String())
			}
		}
	}
	opcodes("opcodes", r.Opcodes)
	opcodes("opcodes in nested torch files", r.NestedOpcodes)
	ui.Fprintf(w, "\nglobals (%d)\n", len(r.Globals))
	for _, g := range r.Globals {
		mark := "ok"
		if !g.Allowed {
			mark = "NO"
		}
		ui.Fprintf(w, "  %-3s %7d  %s\n", mark, g.Count, g.Name)
	}
	if len(r.Blobs) > 0 {
		var total int64
		for _, b := range r.Blobs {
			total += b.Size
		}
		ui.Fprintf(w, "\nnested torch files (%d, %s)\n", len(r.Blobs), DecimalBytes(total))
		const show = 8
		for i, b := range r.Blobs {
			if i == show {
				ui.Fprintf(w, "  … %d more (see --json)\n", len(r.Blobs)-show)
				break
			}
			ui.Fprintf(w, "  @%-10d %9s  %s  %s[%d] on %s\n", b.Offset, DecimalBytes(b.Size), b.Format, b.Storage.DType, b.Storage.Numel, b.Storage.Location)
		}
	}
	if len(r.Storages) > 0 {
		ui.Fprintf(w, "\nstorages (%d)\n", len(r.Storages))
		for i, s := range r.Storages {
			if i == 8 {
				ui.Fprintf(w, "  … %d more (see --json)\n", len(r.Storages)-8)
				break
			}
			ui.Fprintf(w, "  %-12s %s[%d] on %s @%d\n", s.Key, s.DType, s.Numel, s.Location, s.Offset)
		}
	}
	if len(r.Sources) > 0 {
		ui.Fprintf(w, "\nembedded module sources (%d) — executed by load, never by repro\n", len(r.Sources))
		for _, s := range r.Sources {
			ui.Fprintf(w, "  sha256:%s  %d bytes  classes %s\n", s.SHA256.Hex(), s.Size, strings.Join(s.Classes, ", "))
		}
	}
	if len(r.Classes) > 0 {
		ui.Fprintf(w, "\npersistent objects\n")
		for _, c := range r.Classes {
			ui.Fprintf(w, "  %5d  %s (version %d, source sha256:%.12s…)\n", c.Count, c.Class, c.Version, c.SourceSHA256.Hex())
		}
	}
	if len(r.Tensors) > 0 {
		var elems int64
		for _, t := range r.Tensors {
			n := int64(1)
			for _, d := range t.Shape {
				n *= d
			}
			elems += n
		}
		ui.Fprintf(w, "\ntensors (%d, %d elements, %s)\n", len(r.Tensors), elems, DecimalBytes(r.TensorBytes))
		for _, t := range r.Tensors {
			layout := ""
			if !t.Contiguous {
				layout = fmt.Sprintf("  strides %v", t.Strides)
			}
			ui.Fprintf(w, "  %-5s %-18s %s%s\n", t.DType, fmt.Sprint(t.Shape), t.Name, layout)
		}
	}
	if r.ElidedRepeats > 0 {
		ui.Fprintf(w, "  (%d shared containers reached again were listed once, under their first path)\n", r.ElidedRepeats)
	}
	if r.TensorsUnlisted > 0 {
		ui.Fprintf(w, "  (%d more tensors not listed: the listing stops at %d)\n", r.TensorsUnlisted, len(r.Tensors))
	}
}

// DecimalBytes formats a byte count in decimal units (kB, MB, GB).
func DecimalBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

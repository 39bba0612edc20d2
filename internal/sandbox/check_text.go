package sandbox

import (
	"io"

	"github.com/reprolab/repro/internal/ui"
)

// CheckReport is what `repro sandbox check` found: the host facts and
// each control of the self-test.
type CheckReport struct {
	OK       bool      `json:"ok"`
	Host     HostFacts `json:"host"`
	Controls []Control `json:"controls"`
	// ImageVerification is what the trust file's image policy checked
	// (set by the caller; internal/imagetrust).
	ImageVerification any `json:"image_verification,omitempty"`
	// Reaped are the containers removed, on connecting, because the repro
	// process that created them is gone (Engine.Reaped); empty when none.
	Reaped []Reaped `json:"reaped_containers"`
}

// WriteText writes the report for people, one fact or control a line.
func (rep CheckReport) WriteText(w io.Writer) {
	f := rep.Host
	ui.Fprintf(w, "engine      %s (API %s)\n", f.EngineVersion, f.APIVersion)
	ui.Fprintf(w, "containerd  %s\n", f.ContainerdVersion)
	ui.Fprintf(w, "runc        %s\n", f.RuncVersion)
	ui.Fprintf(w, "runtime     %s: %s %v %s\n", f.Runtime.Name, f.Runtime.Path, f.Runtime.Args, f.Runtime.Version)
	ui.Fprintf(w, "kernel      %s (%s)\n", f.Kernel, f.OperatingSystem)
	ui.Fprintf(w, "cgroup      v%s, %s driver\n", f.CgroupVersion, f.CgroupDriver)
	ui.Fprintf(w, "core        %s\n", f.CorePattern)
	ui.Fprintf(w, "seccomp     %s\n", f.SeccompDigest)
	if f.Image != nil {
		ui.Fprintf(w, "image       %s\n            manifest %s\n", f.Image.ID, f.Image.ManifestDigest)
	} else {
		ui.Fprintf(w, "image       none usable (see the error below)\n")
	}
	for _, c := range rep.Controls {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		ui.Fprintf(w, "%s  %-18s %s\n", mark, c.Name, c.Detail)
	}
	if f.RuncAdvisories != nil {
		f.RuncAdvisories.writeText(w)
	}
	if a := f.Runtime.Advisories; a != nil && a != f.RuncAdvisories {
		a.writeText(w)
	}
	for _, d := range f.Runtime.Differences {
		ui.Fprintf(w, "note  %-18s under %s: %s; held by %s\n", d.Control, f.Runtime.Name, d.Runtime, d.HeldBy)
	}
}

// writeText writes one line per known escape of the runtime, and one when
// none is known.
func (a *RuntimeAssessment) writeText(w io.Writer) {
	if len(a.Findings) == 0 {
		ui.Fprintf(w, "escapes     %s: none known to repro\n", a.Label())
		return
	}
	for _, x := range a.Findings {
		verdict := x.Verdict
		if x.Open() {
			verdict = "OPEN, " + verdict
		}
		ui.Fprintf(w, "escapes     %s %s %s: %s\n", a.Label(), x.ID, verdict, x.Evidence)
	}
}

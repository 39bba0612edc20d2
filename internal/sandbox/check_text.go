package sandbox

import (
	"fmt"
	"io"
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
}

// WriteText writes the report for people, one fact or control a line.
func (rep CheckReport) WriteText(w io.Writer) {
	f := rep.Host
	fmt.Fprintf(w, "engine      %s (API %s)\n", f.EngineVersion, f.APIVersion)
	fmt.Fprintf(w, "containerd  %s\n", f.ContainerdVersion)
	fmt.Fprintf(w, "runc        %s\n", f.RuncVersion)
	fmt.Fprintf(w, "runtime     %s: %s %v %s\n", f.Runtime.Name, f.Runtime.Path, f.Runtime.Args, f.Runtime.Version)
	fmt.Fprintf(w, "kernel      %s (%s)\n", f.Kernel, f.OperatingSystem)
	fmt.Fprintf(w, "cgroup      v%s, %s driver\n", f.CgroupVersion, f.CgroupDriver)
	fmt.Fprintf(w, "core        %s\n", f.CorePattern)
	fmt.Fprintf(w, "seccomp     %s\n", f.SeccompDigest)
	if f.Image != nil {
		fmt.Fprintf(w, "image       %s\n            manifest %s\n", f.Image.ID, f.Image.ManifestDigest)
	} else {
		fmt.Fprintf(w, "image       none usable (see the error below)\n")
	}
	for _, c := range rep.Controls {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-18s %s\n", mark, c.Name, c.Detail)
	}
	if f.RuncAdvisories != nil {
		f.RuncAdvisories.writeText(w)
	}
	if a := f.Runtime.Advisories; a != nil && a != f.RuncAdvisories {
		a.writeText(w)
	}
	for _, d := range f.Runtime.Differences {
		fmt.Fprintf(w, "note  %-18s under %s: %s; held by %s\n", d.Control, f.Runtime.Name, d.Runtime, d.HeldBy)
	}
}

// writeText writes one line per known escape of the runtime, and one when
// none is known.
func (a *RuntimeAssessment) writeText(w io.Writer) {
	if len(a.Findings) == 0 {
		fmt.Fprintf(w, "escapes     %s: none known to repro\n", a.Label())
		return
	}
	for _, x := range a.Findings {
		verdict := x.Verdict
		if x.Open() {
			verdict = "OPEN, " + verdict
		}
		fmt.Fprintf(w, "escapes     %s %s %s: %s\n", a.Label(), x.ID, verdict, x.Evidence)
	}
}

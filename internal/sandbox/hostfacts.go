package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/reprolab/repro/internal/safefile"

	"github.com/moby/moby/client"
)

// HostFacts describe the engine and host a run used. They go into every run
// record.
type HostFacts struct {
	EngineVersion     string `json:"engine_version"`
	APIVersion        string `json:"api_version"`
	ContainerdVersion string `json:"containerd_version"`
	RuncVersion       string `json:"runc_version"`
	// RuncAdvisories judge the engine's runc against the known escapes;
	// under runc they are Runtime.Advisories.
	RuncAdvisories *RuntimeAssessment `json:"runc_advisories,omitempty"`
	// Runtime is the runtime the containers of the run used (part of
	// the policy): its name, path and arguments as the engine has it
	// registered, and its version.
	Runtime         RuntimeFacts `json:"runtime"`
	InitVersion     string       `json:"init_version,omitempty"`
	Kernel          string       `json:"kernel"`
	OperatingSystem string       `json:"operating_system"`
	CgroupVersion   string       `json:"cgroup_version"`
	CgroupDriver    string       `json:"cgroup_driver"`
	StorageDriver   string       `json:"storage_driver"`
	SecurityOptions []string     `json:"security_options"`
	CorePattern     string       `json:"core_pattern"`
	SeccompDigest   string       `json:"seccomp_profile_digest"`
	Image           *Image       `json:"image,omitempty"` // set by the caller
	Warnings        []string     `json:"warnings,omitempty"`
}

// HostFacts asks the engine for its versions and configuration. The caller
// sets Image to the image of the run.
func (e *Engine) HostFacts(ctx context.Context) (HostFacts, error) {
	v, err := e.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return HostFacts{}, fmt.Errorf("failed to read the engine version: %w", err)
	}
	info, err := e.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return HostFacts{}, fmt.Errorf("failed to read the engine information: %w", err)
	}
	f := HostFacts{
		EngineVersion:   v.Version,
		APIVersion:      e.cli.ClientVersion(),
		Kernel:          info.Info.KernelVersion,
		OperatingSystem: info.Info.OperatingSystem,
		CgroupVersion:   info.Info.CgroupVersion,
		CgroupDriver:    info.Info.CgroupDriver,
		StorageDriver:   info.Info.Driver,
		SecurityOptions: info.Info.SecurityOptions,
		SeccompDigest:   SeccompDigest().String(),
		Runtime:         e.runtime,
	}
	for _, c := range v.Components {
		switch strings.ToLower(c.Name) {
		case "containerd":
			f.ContainerdVersion = c.Version
		case "runc":
			f.RuncVersion = c.Version
		case "docker-init":
			f.InitVersion = c.Version
		}
	}
	if f.ContainerdVersion == "" {
		f.ContainerdVersion = info.Info.ContainerdCommit.ID
	}
	if f.RuncVersion == "" {
		f.RuncVersion = info.Info.RuncCommit.ID
	}
	if f.Runtime.Name == Runc && f.Runtime.Advisories != nil {
		f.RuncAdvisories = f.Runtime.Advisories
	} else if f.RuncVersion != "" {
		path := "runc"
		if r, ok := info.Info.Runtimes[string(Runc)]; ok && r.Path != "" {
			path = r.Path
		}
		f.RuncAdvisories = AssessRuntime("/", Runc, path, f.RuncVersion)
	}
	if b, err := safefile.ReadFile("/proc/sys/kernel/core_pattern", 4096); err == nil {
		f.CorePattern = strings.TrimSpace(string(b))
	}
	f.Warnings = hostWarnings(f)
	return f, nil
}

// hostWarnings names the facts that weaken the sandbox without stopping
// it, each once. The open escapes of the runtime the run uses are one
// warning each; those of an engine's runc the run does not use are one
// note, which says why the run uses runsc where that is the default.
func hostWarnings(f HostFacts) []string {
	var w []string
	if a := f.Runtime.Advisories; a != nil {
		for _, x := range a.OpenFindings() {
			w = append(w, fmt.Sprintf("%s: %s (%s) is %s: %s; install a %s with the fix (a run under it needs the trust file's waiver of each open escape, with a reason and a date)",
				a.Label(), x.ID, x.Summary, x.Verdict, x.Evidence, a.Runtime))
		}
	}
	if c := f.Runtime.Choice; c != nil && c.By == "default" && c.Runtime != Runc {
		w = append(w, c.Reason)
	} else if a := f.RuncAdvisories; a != nil && f.Runtime.Name != Runc && len(a.OpenFindings()) > 0 {
		var ids []string
		for _, x := range a.OpenFindings() {
			ids = append(ids, x.ID)
		}
		w = append(w, fmt.Sprintf("the engine's %s has %d open known container escapes (%s); this run does not use it (runtime %s)",
			a.Label(), len(ids), strings.Join(ids, ", "), f.Runtime.Name))
	}
	if strings.HasPrefix(f.CorePattern, "|") {
		w = append(w, fmt.Sprintf("the host's core_pattern is a pipe (%s): the kernel hands core dumps to that program even with a core limit of 0", f.CorePattern))
	}
	if os.Geteuid() == 0 {
		w = append(w, fmt.Sprintf("repro runs as root: programs run as the fixed unprivileged user %d", ProgramUser))
	}
	return w
}

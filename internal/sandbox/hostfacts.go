package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// MinRunc is the first upstream runc release with the fix for
// CVE-2024-21626 ("Leaky Vessels").
const MinRunc = "1.1.12"

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
	if b, err := safefile.ReadFile("/proc/sys/kernel/core_pattern", 4096); err == nil {
		f.CorePattern = strings.TrimSpace(string(b))
	}
	f.Warnings = hostWarnings(f)
	return f, nil
}

// hostWarnings names the facts that weaken the sandbox without stopping it.
func hostWarnings(f HostFacts) []string {
	var w []string
	if f.RuncVersion != "" && versionLess(f.RuncVersion, MinRunc) {
		w = append(w, fmt.Sprintf("runc %s is older than %s, the first upstream release fixing CVE-2024-21626 (container escape through a leaked working-directory descriptor); a distribution build may carry the fix as a backport: check its security tracker, or install a newer runc", f.RuncVersion, MinRunc))
	}
	if strings.HasPrefix(f.CorePattern, "|") {
		w = append(w, fmt.Sprintf("the host's core_pattern is a pipe (%s): the kernel hands core dumps to that program even with a core limit of 0", f.CorePattern))
	}
	if os.Geteuid() == 0 {
		w = append(w, fmt.Sprintf("repro runs as root: programs run as the fixed unprivileged user %d", ProgramUser))
	}
	return w
}

// versionLess compares the leading dotted numbers of two versions
// ("1.1.5+ds1-1" < "1.1.12").
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func versionParts(v string) []int {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		v = v[:i]
	}
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

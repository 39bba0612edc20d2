package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
)

// TestDecideRuntime: a run uses the --runtime flag, else the REPRO_HOME
// setting, else the host's default: runsc where the engine's runc has an
// open known escape (Debian bookworm's 1.1.5: three), with the reason and
// the cost, runc where it has none. A flag never weakens the setting; a
// settings file that does not parse is a usage error naming it.
func TestDecideRuntime(t *testing.T) {
	open := &RuntimeAssessment{Runtime: Runc, Version: "runc version 1.1.5+ds1", Upstream: "1.1.5", Package: "runc", PackageVersion: "1.1.5+ds1-1+deb12u1"}
	fixed := &RuntimeAssessment{Runtime: Runc, Version: "runc version 1.3.3", Upstream: "1.3.3"}
	for _, adv := range RuntimeAdvisories {
		if adv.Runtime != Runc {
			continue
		}
		open.Findings = append(open.Findings, RuntimeFinding{ID: adv.ID, Fixed: adv.Fixed, Verdict: AdvisoryAffected, Evidence: "test"})
		fixed.Findings = append(fixed.Findings, RuntimeFinding{ID: adv.ID, Fixed: adv.Fixed, Verdict: AdvisoryFixed, Evidence: "test"})
	}
	home := t.TempDir()
	s, err := ReadSettings(home)
	if err != nil || s.Runtime != "" {
		t.Fatalf("no settings file: %+v, %v; want no runtime set", s, err)
	}
	c, err := DecideRuntime(s, "", open)
	if err != nil || c.Runtime != Runsc || c.By != "default" {
		t.Fatalf("default with an open runc: %+v, %v; want runsc by default", c, err)
	}
	for _, want := range []string{"runc 1.1.5", "CVE-2025-31133", "1.6-1.75x", "runtime_waivers"} {
		if !strings.Contains(c.Reason, want) {
			t.Errorf("the default's reason %q does not name %q", c.Reason, want)
		}
	}
	if c, err := DecideRuntime(s, "", fixed); err != nil || c.Runtime != Runc || c.By != "default" {
		t.Fatalf("default with a fixed runc: %+v, %v; want runc", c, err)
	}
	if c, err := DecideRuntime(s, "", nil); err != nil || c.Runtime != Runsc {
		t.Fatalf("default with a runc that cannot be judged: %+v, %v; want runsc", c, err)
	}
	if c, err := DecideRuntime(s, "runc", open); err != nil || c.Runtime != Runc || c.By != "flag" {
		t.Fatalf("--runtime runc (the trust file's waiver is checked later): %+v, %v", c, err)
	}
	if err := WriteSettings(home, Settings{Runtime: Runsc}); err != nil {
		t.Fatal(err)
	}
	if s, err = ReadSettings(home); err != nil {
		t.Fatal(err)
	}
	if c, err := DecideRuntime(s, "", fixed); err != nil || c.Runtime != Runsc || c.By != "setting" {
		t.Fatalf("setting runsc: %+v, %v", c, err)
	}
	// A flag never weakens the setting.
	if _, err := DecideRuntime(s, "runc", fixed); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "weaker") {
		t.Fatalf("--runtime runc under a runsc setting: %v, want a usage error", err)
	}
	if _, err := DecideRuntime(s, "kata", fixed); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unknown runtime: %v", err)
	}
	for _, bad := range []string{`{"runtime": "kata"}`, `{"runtime": "runsc", "x": 1}`, `{"runtime": "runsc"} {}`, `[`} {
		if err := os.WriteFile(layout.Home(home).SandboxSettings(), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSettings(home); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), filepath.Base(layout.Home(home).SandboxSettings())) {
			t.Errorf("settings %s: %v, want a usage error naming the file", bad, err)
		}
	}
}

// TestRunscRefusedWhileGapsRemain: an engine for runsc is refused with
// exit 3 while RunscGaps lists a control runsc does not hold (a listed
// test gap, then the real list), and given when the list is empty; a missing runtime names the setup step, and
// nothing falls back to runc.
func TestRunscRefusedWhileGapsRemain(t *testing.T) {
	saved := RunscGaps
	t.Cleanup(func() { RunscGaps = saved })
	RunscGaps = []string{"test gap: a control runsc would not hold"}
	_, err := ConnectRuntime(context.Background(), Runsc)
	if exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("with a gap listed: exit %d, want 3: %v", exitcode.Of(err), err)
	}
	if !strings.Contains(err.Error(), "weaker policy") && !strings.Contains(err.Error(), "scripts/deps.sh runsc") {
		t.Fatalf("error says neither the gaps nor the setup step: %v", err)
	}
	missing := strings.Contains(err.Error(), "scripts/deps.sh runsc")
	RunscGaps = saved
	e, err := ConnectRuntime(context.Background(), Runsc)
	switch {
	case err == nil:
		diffs := e.RuntimeFacts().Differences
		e.Close()
		if len(RunscGaps) > 0 {
			t.Fatal("an engine for runsc was given despite RunscGaps")
		}
		if len(diffs) != len(RunscDifferences) {
			t.Fatalf("the engine's runtime facts list %d differences, want %d", len(diffs), len(RunscDifferences))
		}
	case len(RunscGaps) > 0 && exitcode.Of(err) == exitcode.Precondition && strings.Contains(err.Error(), RunscGaps[0]):
		t.Log(err) // refused for the gaps still listed
	case missing && exitcode.Of(err) == exitcode.Precondition:
		t.Log(err) // runsc is not registered with this engine
	default:
		t.Fatalf("exit %d: %v", exitcode.Of(err), err)
	}
}

// TestCheckRunscArgs: a runsc registration is accepted only with no
// network stack, the container's seccomp profile applied, and exactly one
// platform of RunscPlatforms (systrap, the one the suites run under); each
// refusal is exit 3 and names the setup step.
func TestCheckRunscArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--platform=systrap", "--network=none", "--oci-seccomp"}, true},
		{[]string{"--oci-seccomp", "--platform=systrap", "--network=none"}, true},
		{[]string{"--platform=ptrace", "--network=none", "--oci-seccomp"}, false},
		{[]string{"--platform=systrap", "--network=none", "--oci-seccomp", "--debug"}, true},
		{[]string{"--network=none", "--oci-seccomp"}, false},
		{[]string{"--platform=kvm", "--network=none", "--oci-seccomp"}, false},
		{[]string{"--platform", "systrap", "--network=none", "--oci-seccomp"}, false},
		{[]string{"--platform=systrap", "--platform=ptrace", "--network=none", "--oci-seccomp"}, false},
		{[]string{"--platform=systrap", "--oci-seccomp"}, false},
		{[]string{"--platform=systrap", "--network=sandbox", "--oci-seccomp"}, false},
		{[]string{"--platform=systrap", "--network=none"}, false},
		{nil, false},
	} {
		wantRunscRefusal(t, fmt.Sprintf("%q", c.args), c.ok, checkRunscArgs(c.args))
	}
}

// TestJudgeRuntime: checkRuntime's judgement of the engine's registrations
// applies the platform, argument, version and gap refusals to runsc, and
// none of them to runc.
func TestJudgeRuntime(t *testing.T) {
	good := registration{Path: "/usr/local/lib/repro/runsc", Args: []string{"--platform=systrap", "--systrap-disable-fast-path", "--network=none", "--oci-seccomp"}}
	tested := "runsc version " + RunscTested
	withArgs := func(args ...string) registration { return registration{Path: good.Path, Args: args} }
	for _, c := range []struct {
		name    string
		rt      Runtime
		regs    map[string]registration
		version string
		gaps    []string
		ok      bool
	}{
		{"runsc as deps.sh registers it", Runsc, map[string]registration{"runc": {Path: "runc"}, "runsc": good}, tested, nil, true},
		{"runsc not registered", Runsc, map[string]registration{"runc": {Path: "runc"}}, tested, nil, false},
		{"Debian's ptrace registration", Runsc, map[string]registration{"runsc": withArgs("--platform=ptrace", "--network=none", "--oci-seccomp")}, tested, nil, false},
		{"no platform", Runsc, map[string]registration{"runsc": withArgs("--network=none", "--oci-seccomp")}, tested, nil, false},
		{"without --oci-seccomp", Runsc, map[string]registration{"runsc": withArgs("--platform=systrap", "--network=none")}, tested, nil, false},
		{"Debian's runsc build", Runsc, map[string]registration{"runsc": good}, "runsc version 0.0~20221219.0", nil, false},
		{"a runsc with no --version", Runsc, map[string]registration{"runsc": good}, "", nil, false},
		{"a gap of the policy", Runsc, map[string]registration{"runsc": good}, tested, []string{"a control runsc does not hold"}, false},
		{"runc with any arguments", Runc, map[string]registration{"runc": {Path: "runc", Args: []string{"--debug"}}}, "runc version 1.1.12", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gaps := RunscGaps
			RunscGaps = c.gaps
			defer func() { RunscGaps = gaps }()
			var asked []string
			f, err := judgeRuntime(c.rt, c.regs, func(path string) string {
				asked = append(asked, path)
				return c.version
			})
			switch {
			case c.gaps != nil:
				// Not a setup step: the refusal names the gap.
				if exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), c.gaps[0]) {
					t.Errorf("exit %d, %v; want 3 naming %q", exitcode.Of(err), err, c.gaps[0])
				}
			case c.rt == Runsc:
				wantRunscRefusal(t, c.name, c.ok, err)
			case err != nil:
				t.Errorf("refused: %v", err)
			}
			if err != nil {
				return
			}
			reg := c.regs[string(c.rt)]
			if f.Name != c.rt || f.Path != reg.Path || !slices.Equal(f.Args, reg.Args) || f.Version != c.version || !slices.Equal(asked, []string{reg.Path}) {
				t.Errorf("facts %+v (versions asked of %q), want the registration %+v and version %q", f, asked, reg, c.version)
			}
			if c.rt == Runsc && !slices.Equal(f.Differences, RunscDifferences) {
				t.Errorf("differences %+v, want RunscDifferences %+v", f.Differences, RunscDifferences)
			}
		})
	}
}

// wantRunscRefusal checks that err accepts (ok) or refuses what: a refusal
// is exit 3 and names the setup step.
func wantRunscRefusal(t *testing.T, what string, ok bool, err error) {
	t.Helper()
	switch {
	case ok && err != nil:
		t.Errorf("%s: refused: %v", what, err)
	case !ok && err == nil:
		t.Errorf("%s: accepted", what)
	case !ok && (exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "scripts/deps.sh runsc")):
		t.Errorf("%s: exit %d, %v; want 3 naming the setup step", what, exitcode.Of(err), err)
	}
}

// TestCheckRunscVersion: a runsc is accepted only at or after the build
// the suites run against, and RunscTested is the version tools/gvisor pins.
func TestCheckRunscVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		ok      bool
	}{
		{"runsc version " + RunscTested, true},
		{"runsc version v0.0.0-20261101000000-0123456789ab", true},
		{"runsc version release-20260905.0", true},
		{"runsc version release-20270101.1", true},
		{"runsc version 0.0~20221219.0", false},
		{"runsc version release-20260904.0", false},
		{"runsc version v0.0.0-20260904235959-160fafc42237", false},
		{"runsc version VERSION_MISSING", false},
		{"", false},
	} {
		wantRunscRefusal(t, fmt.Sprintf("%q", c.version), c.ok, checkRunscVersion(c.version))
	}
	mod, err := os.ReadFile("../../tools/gvisor/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*gvisor\.dev/gvisor ` + regexp.QuoteMeta(RunscTested) + `\b`).Match(mod) {
		t.Errorf("tools/gvisor/go.mod does not pin gvisor.dev/gvisor %s:\n%s", RunscTested, mod)
	}
}

// TestKernelSeenSignatures: gVisor is told by its fixed build line and a
// release that is not the host's; a host kernel, or a host release dressed
// in gVisor's build line, is not gVisor.
func TestKernelSeenSignatures(t *testing.T) {
	const host = "6.18.44-fc-v1147"
	gv := func(rel string) string { return "Linux version " + rel + " #1 SMP Sun Jan 10 15:06:54 PST 2016" }
	for _, c := range []struct {
		rt                   Runtime
		release, procVersion string
		ok                   bool
	}{
		{Runsc, "4.4.0", gv("4.4.0"), true},
		{Runsc, "4.19.0-gvisor", gv("4.19.0-gvisor") + "\n", true},
		{Runsc, host, gv(host), false},
		{Runsc, "4.19.0-gvisor", gv("4.4.0"), false},
		{Runsc, "4.19.0-gvisor", "Linux version 4.19.0-gvisor #1 SMP PREEMPT_DYNAMIC @0", false},
		{Runsc, host, "Linux version " + host + " (builder@sandboxing) #1 SMP PREEMPT_DYNAMIC @0", false},
		{Runc, host, "Linux version " + host + " (builder@sandboxing) #1 SMP PREEMPT_DYNAMIC @0", true},
		{Runc, "4.19.0-gvisor", gv("4.19.0-gvisor"), false},
	} {
		if err := KernelSeen(c.rt, host, c.release, c.procVersion); (err == nil) != c.ok {
			t.Errorf("KernelSeen(%s, %q, %q) = %v, want ok %v", c.rt, c.release, c.procVersion, err, c.ok)
		}
	}
}

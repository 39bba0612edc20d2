package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// Runtime is the OCI runtime that runs every container of an Engine. It is
// part of the policy: every other control stays on under each runtime, and
// the runtime is recorded in the host facts of every run.
type Runtime string

const (
	// Runc runs containers on the host kernel (namespaces, cgroups,
	// seccomp): the engine's default runtime.
	Runc Runtime = "runc"
	// Runsc runs containers under gVisor: the program's system calls are
	// served by gVisor's user-space kernel, a second isolation boundary
	// between the program and the host kernel.
	Runsc Runtime = "runsc"
)

// Runtimes lists the runtimes a policy may name, weakest first.
var Runtimes = []Runtime{Runc, Runsc}

// ParseRuntime reads a runtime name; anything but runc or runsc is a usage
// error.
func ParseRuntime(s string) (Runtime, error) {
	for _, r := range Runtimes {
		if s == string(r) {
			return r, nil
		}
	}
	return "", exitcode.Errorf(exitcode.Usage, "sandbox runtime %q: want runc or runsc", s)
}

// strength orders runtimes by isolation: a higher value isolates more.
func (r Runtime) strength() int { return slices.Index(Runtimes, r) }

// RunscPlatforms are the gVisor platforms runsc may be registered with:
// systrap (system calls trapped by seccomp and served through shared
// memory; gVisor's default since 2023), the one the sandbox suites run
// under. ptrace, the only platform of Debian bookworm's runsc, costs
// about a quarter more per HumanEval+ run and is not accepted, since no
// suite runs under it; the KVM platform does not start on the machines
// this was measured on.
var RunscPlatforms = []string{"systrap"}

// RunscArgs are the runtime arguments runsc must be registered with,
// besides one --platform of RunscPlatforms: no network stack in the
// sandbox (needed with a container that has no network), and the
// container's seccomp profile applied inside the sandbox (runsc ignores
// it otherwise).
var RunscArgs = []string{"--network=none", "--oci-seccomp"}

// RunscSetup says how to install and register runsc.
const RunscSetup = "build and register it with 'bash scripts/deps.sh runsc' (runsc built from tools/gvisor into /usr/local/lib/repro, a \"runsc\" entry with runtimeArgs " +
	`["--platform=systrap", "--systrap-disable-fast-path", "--network=none", "--oci-seccomp"]` + " under \"runtimes\" in /etc/docker/daemon.json, then SIGHUP to dockerd, which reloads its runtimes without a restart)"

// RunscGaps are the controls of the policy that runsc does not hold as runc
// does and that nothing else holds in its place, each proved by a hostile
// test that fails under runsc. While the list is not empty, an Engine for
// runsc is refused (exitcode.Precondition): a run never gets a weaker
// policy than the one it would have under runc. It is empty: each
// difference found so far is held another way (RunscDifferences).
var RunscGaps []string

// RuntimeDifference is a control that a runtime holds differently from
// runc, and what holds it in its place. Each has a hostile case that shows
// the runtime still differs, and tests of what holds it instead.
type RuntimeDifference struct {
	Control string `json:"control"`
	Runtime string `json:"runtime"` // what the runtime does
	HeldBy  string `json:"held_by"` // what holds the control instead
}

// RunscDifferences are the differences of the runsc repro is tested with
// (RunscTested) that are not closed inside the sandbox itself (the seccomp
// launcher closes the others; docs/sandbox.md lists them all). They are
// recorded in the host facts of every run under runsc. It is empty: the
// one found in Debian bookworm's runsc 0.0~20221219 (gVisor ignored
// PR_SET_DUMPABLE for /proc/PID/fd, maps and environ) is fixed in
// RunscTested, whose hostile case for it passes as under runc.
var RunscDifferences []RuntimeDifference

// RunscTested is the gVisor build that the hostile, integrity and runtime
// suites run against: the version of gvisor.dev/gvisor that
// tools/gvisor/go.mod pins and scripts/deps.sh builds. A runsc that
// reports an older build, or none, is refused (checkRunscVersion): its
// differences from runc are not the ones RunscDifferences lists.
const RunscTested = "v0.0.0-20260905035102-160fafc42237"

// checkRunscVersion reports, as an exitcode.Precondition error, a runsc
// version (as runsc --version prints it) that names no gVisor build or
// names one older than RunscTested. Builds are compared by their day: a
// release-YYYYMMDD.N, or the commit day of a Go pseudo-version.
func checkRunscVersion(version string) error {
	day := gvisorDay(upstreamVersion(Runsc, version))
	switch {
	case day == "":
		return exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc reports version %q, which names no gVisor build, so repro cannot tell it is at least gVisor %s, the build its sandbox suites run against: %s",
			version, RunscTested, RunscSetup)
	case day < gvisorDay(RunscTested):
		return exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc reports version %q, older than gVisor %s, the build repro's sandbox suites run against: %s",
			version, RunscTested, RunscSetup)
	}
	return nil
}

// gvisorDay returns the YYYYMMDD of an upstream gVisor version
// (upstreamVersion's form), "" when it has none.
func gvisorDay(up string) string {
	if m := goPseudo.FindString(up); m != "" {
		return m[len("v0.0.0-") : len("v0.0.0-")+8]
	}
	if d, ok := strings.CutPrefix(up, "release-"); ok && len(d) >= 8 {
		return d[:8]
	}
	return ""
}

// RuntimeFacts describe the runtime an Engine runs its containers with.
type RuntimeFacts struct {
	Name    Runtime  `json:"name"`
	Path    string   `json:"path"`
	Args    []string `json:"args,omitempty"`
	Version string   `json:"version,omitempty"`
	// Differences are the runtime's differences from runc and what holds
	// each control instead.
	Differences []RuntimeDifference `json:"differences,omitempty"`
	// Advisories judge the runtime against the known escapes
	// (RuntimeAdvisories), backports included.
	Advisories *RuntimeAssessment `json:"advisories,omitempty"`
	// Choice is how the runtime was chosen (ConnectChosen), with the
	// default's reason or the waiver that lets runc run.
	Choice *RuntimeChoice `json:"choice,omitempty"`
}

// checkRuntime asks the engine whether rt is registered as this package
// needs it. A runtime that is missing or registered without the arguments
// that keep the policy whole is an exitcode.Precondition error: a run that
// asked for runsc never falls back to runc.
func checkRuntime(ctx context.Context, cli *client.Client, rt Runtime) (RuntimeFacts, error) {
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "failed to read the engine's runtimes: %v", err)
	}
	regs := make(map[string]registration, len(info.Info.Runtimes))
	for name, r := range info.Info.Runtimes {
		regs[name] = registration{Path: r.Path, Args: r.Args}
	}
	return judgeRuntime(rt, regs, func(path string) string { return runtimeVersion(ctx, path) })
}

// registration is a runtime as the engine has it registered.
type registration struct {
	Path string
	Args []string
}

// judgeRuntime is checkRuntime's judgement of the engine's registrations,
// with version giving the first line of a runtime's --version.
func judgeRuntime(rt Runtime, regs map[string]registration, version func(path string) string) (RuntimeFacts, error) {
	reg, ok := regs[string(rt)]
	if !ok {
		if rt == Runsc {
			return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the docker engine has no runtime %q (it has %s): %s",
				rt, strings.Join(runtimeNames(regs), ", "), RunscSetup)
		}
		return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the docker engine has no runtime %q", rt)
	}
	f := RuntimeFacts{Name: rt, Path: reg.Path, Args: reg.Args}
	if rt == Runsc {
		f.Differences = RunscDifferences
		if err := checkRunscArgs(reg.Args); err != nil {
			return RuntimeFacts{}, err
		}
	}
	f.Version = version(reg.Path)
	if rt == Runsc {
		if err := checkRunscVersion(f.Version); err != nil {
			return RuntimeFacts{}, err
		}
	}
	f.Advisories = AssessRuntime("/", rt, reg.Path, f.Version)
	if rt == Runsc && len(RunscGaps) > 0 {
		return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc (%s) would run the sandbox under a weaker policy than runc, so runs under it are refused: %s",
			f.Version, strings.Join(RunscGaps, "; "))
	}
	return f, nil
}

// checkRunscArgs reports, as an exitcode.Precondition error, a runsc
// registration that lacks one of RunscArgs or names no platform, more than
// one, or one not in RunscPlatforms.
func checkRunscArgs(args []string) error {
	for _, a := range RunscArgs {
		if !slices.Contains(args, a) {
			return exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc is registered with arguments %q, without %s: %s", args, a, RunscSetup)
		}
	}
	var platforms []string
	for _, a := range args {
		if strings.HasPrefix(a, "--platform") {
			platforms = append(platforms, a)
		}
	}
	if len(platforms) != 1 || !slices.Contains(RunscPlatforms, strings.TrimPrefix(platforms[0], "--platform=")) {
		return exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc is registered with platform arguments %q, want one of --platform=%s: %s",
			platforms, strings.Join(RunscPlatforms, ", --platform="), RunscSetup)
	}
	return nil
}

func runtimeNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// runtimeVersion returns the first line of "PATH --version" for a
// runtime the engine runs from an absolute path on this host; "" when
// it cannot be had (a relative path is looked up in the engine's PATH,
// which may differ from repro's).
func runtimeVersion(ctx context.Context, path string) string {
	if !filepath.IsAbs(path) {
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return ""
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if len(line) > 200 {
		line = line[:200]
	}
	return strings.TrimSpace(line)
}

// Settings are the sandbox settings of a REPRO_HOME
// (REPRO_HOME/sandbox/settings.json).
type Settings struct {
	// Runtime is the weakest runtime a run may use; "" leaves it to the
	// host (DefaultRuntime).
	Runtime Runtime `json:"runtime,omitempty"`
}

// ReadSettings reads the sandbox settings of home; a missing file gives
// the defaults (no runtime set: the host's default). A file that cannot
// be parsed is a usage error that names it.
func ReadSettings(home string) (Settings, error) {
	p := layout.Home(home).SandboxSettings()
	b, err := safefile.ReadFile(p, 64<<10)
	if errors.Is(err, os.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, exitcode.Errorf(exitcode.Precondition, "failed to read the sandbox settings %q: %v", p, err)
	}
	var s Settings
	if err := strictjson.Decode(b, &s); err != nil {
		return Settings{}, exitcode.Errorf(exitcode.Usage, "sandbox settings %q: %v: fix or remove the file", p, err)
	}
	if s.Runtime != "" {
		if _, err := ParseRuntime(string(s.Runtime)); err != nil {
			return Settings{}, exitcode.Errorf(exitcode.Usage, "sandbox settings %q: %v", p, err)
		}
	}
	return s, nil
}

// WriteSettings stores s as the sandbox settings of home, atomically.
func WriteSettings(home string, s Settings) error {
	if _, err := ParseRuntime(string(s.Runtime)); err != nil {
		return err
	}
	p := layout.Home(home).SandboxSettings()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b := fmt.Appendf(nil, "{\n  \"runtime\": %q\n}\n", s.Runtime)
	return atomicfile.WriteFile(p, b, 0o644)
}

// RunscCost is what runsc costs against runc, for the note that names the
// default (docs/humaneval.md, "What gVisor costs").
const RunscCost = "a HumanEval+ scoring run takes about 1.6-1.75x its time under runc"

// RuncWaiverHow says how a run may use a runc with open known escapes: the
// trust file's waivers, as the production profile takes them.
const RuncWaiverHow = `waive each escape in the trust file (REPRO_HOME/trust.json or --trust FILE): "image": {"runtime_waivers": [{"id": ..., "package": "runc", "reason": ..., "expires": "YYYY-MM-DD"}]}`

// RuntimeChoice is how a run's runtime was chosen; it is recorded in the
// run's host facts (RuntimeFacts.Choice).
type RuntimeChoice struct {
	Runtime Runtime `json:"runtime"`
	// By is "flag" (--runtime), "setting" (REPRO_HOME's, 'repro sandbox
	// runtime'), "default" (DefaultRuntime) or "caller" (a program's own
	// choice: the tests).
	By string `json:"by"`
	// Reason says why the default is what it is.
	Reason string `json:"reason,omitempty"`
}

// DefaultRuntime is the runtime of a run that neither a flag nor the
// REPRO_HOME setting names: runsc where the engine's runc (judged in runc)
// has an open known escape, runc elsewhere; with the reason and the cost,
// for people.
func DefaultRuntime(runc *RuntimeAssessment) (Runtime, string) {
	if runc == nil {
		return Runsc, "runs use gVisor's runsc by default, since the engine reports no runc version to judge against the known escapes; " + RunscCost
	}
	open := runc.OpenFindings()
	if len(open) == 0 {
		return Runc, fmt.Sprintf("the engine's %s has no open known escape", runc.Label())
	}
	ids := make([]string, len(open))
	for i, f := range open {
		ids[i] = f.ID
	}
	return Runsc, fmt.Sprintf("runs use gVisor's runsc by default, since the engine's %s has %d open known container escapes (%s); under runsc gVisor's own kernel serves the program's system calls, and %s; runc takes a recorded waiver: %s",
		runc.Label(), len(open), strings.Join(ids, ", "), RunscCost, RuncWaiverHow)
}

// checkFlag parses a --runtime flag and refuses one weaker than the
// setting s (exitcode.Usage).
func checkFlag(s Settings, flag string) (Runtime, error) {
	rt, err := ParseRuntime(flag)
	if err != nil {
		return "", err
	}
	if s.Runtime != "" && rt.strength() < s.Runtime.strength() {
		return "", exitcode.Errorf(exitcode.Usage, "--runtime %s is weaker than the runtime %s the sandbox settings require: drop the flag, or change the setting with 'repro sandbox runtime %s'",
			rt, s.Runtime, rt)
	}
	return rt, nil
}

// DecideRuntime returns the runtime of a run: flag when it is set and at
// least as strong as the setting s (a weaker one is a usage error: the
// setting is changed with 'repro sandbox runtime', not bypassed), else the
// setting, else DefaultRuntime of the engine's runc (judged in runc). A
// run under a runc with open known escapes also needs the trust file's
// waiver of each (internal/imagetrust applies it).
func DecideRuntime(s Settings, flag string, runc *RuntimeAssessment) (RuntimeChoice, error) {
	switch {
	case flag != "":
		rt, err := checkFlag(s, flag)
		if err != nil {
			return RuntimeChoice{}, err
		}
		return RuntimeChoice{Runtime: rt, By: "flag"}, nil
	case s.Runtime != "":
		return RuntimeChoice{Runtime: s.Runtime, By: "setting"}, nil
	}
	rt, why := DefaultRuntime(runc)
	return RuntimeChoice{Runtime: rt, By: "default", Reason: why}, nil
}

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

// RunscArgs are the runtime arguments runsc must be registered with: the
// ptrace platform (the KVM platform does not start on the machines this
// was measured on), no network stack in the sandbox (needed with a
// container that has no network), and the container's seccomp profile
// applied inside the sandbox (runsc ignores it otherwise).
var RunscArgs = []string{"--platform=ptrace", "--network=none", "--oci-seccomp"}

// RunscSetup says how to install and register runsc.
const RunscSetup = "install and register it with 'bash scripts/deps.sh runsc' (apt-get install runsc, a \"runsc\" entry with runtimeArgs " +
	`["--platform=ptrace", "--network=none", "--oci-seccomp"]` + " under \"runtimes\" in /etc/docker/daemon.json, then SIGHUP to dockerd, which reloads its runtimes without a restart)"

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

// RunscDifferences are the differences of runsc 0.0~20221219 (Debian
// bookworm's) that are not closed inside the sandbox itself (the seccomp
// launcher closes the others; docs/sandbox.md lists them all). They are
// recorded in the host facts of every run under runsc.
var RunscDifferences = []RuntimeDifference{{
	Control: "process descriptors",
	Runtime: "gVisor ignores PR_SET_DUMPABLE for /proc/PID/fd, maps and environ: a program can open the pipes of another process of its user and read its memory map and environment (not its memory: /proc/PID/mem, ptrace and process_vm_readv stay refused)",
	HeldBy: "the HumanEval supervisor, the one process that shares a sandbox with programs it does not trust, tags every frame on its channel to the host with a per-container key (HMAC-SHA256) and checks its stdin after each job, " +
		"so a program that writes into or reads from that channel fails its own job and no other; its environment holds nothing secret",
}}

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
	reg, ok := info.Info.Runtimes[string(rt)]
	if !ok {
		if rt == Runsc {
			return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the docker engine has no runtime %q (it has %s): %s",
				rt, strings.Join(runtimeNames(info.Info.Runtimes), ", "), RunscSetup)
		}
		return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the docker engine has no runtime %q", rt)
	}
	f := RuntimeFacts{Name: rt, Path: reg.Path, Args: reg.Args}
	if rt == Runsc {
		f.Differences = RunscDifferences
		for _, a := range RunscArgs {
			if !slices.Contains(reg.Args, a) {
				return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc is registered with arguments %q, without %s: %s",
					reg.Args, a, RunscSetup)
			}
		}
		for _, a := range reg.Args {
			if a != "--platform=ptrace" && strings.HasPrefix(a, "--platform") {
				return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc is registered with %s: %s", a, RunscSetup)
			}
		}
	}
	f.Version = runtimeVersion(ctx, reg.Path)
	f.Advisories = AssessRuntime("/", rt, reg.Path, f.Version)
	if rt == Runsc && len(RunscGaps) > 0 {
		return RuntimeFacts{}, exitcode.Errorf(exitcode.Precondition, "the engine's runtime runsc (%s) would run the sandbox under a weaker policy than runc, so runs under it are refused: %s",
			f.Version, strings.Join(RunscGaps, "; "))
	}
	return f, nil
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
	// Runtime is the weakest runtime a run may use; "" means runc.
	Runtime Runtime `json:"runtime,omitempty"`
}

// ReadSettings reads the sandbox settings of home; a missing file gives
// the defaults (runc). A file that cannot be parsed is a usage error that
// names it.
func ReadSettings(home string) (Settings, error) {
	p := layout.Home(home).SandboxSettings()
	b, err := safefile.ReadFile(p, 64<<10)
	if errors.Is(err, os.ErrNotExist) {
		return Settings{Runtime: Runc}, nil
	}
	if err != nil {
		return Settings{}, exitcode.Errorf(exitcode.Precondition, "failed to read the sandbox settings %q: %v", p, err)
	}
	var s Settings
	if err := strictjson.Decode(b, &s); err != nil {
		return Settings{}, exitcode.Errorf(exitcode.Usage, "sandbox settings %q: %v: fix or remove the file", p, err)
	}
	if s.Runtime == "" {
		s.Runtime = Runc
	}
	if _, err := ParseRuntime(string(s.Runtime)); err != nil {
		return Settings{}, exitcode.Errorf(exitcode.Usage, "sandbox settings %q: %v", p, err)
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

// ChooseRuntime returns the runtime of a run: the one the settings of home
// name, or flag when it is set and at least as strong. A flag that would
// weaken the setting (runc where the setting says runsc) is a usage error:
// the setting is changed with 'repro sandbox runtime', not bypassed.
func ChooseRuntime(home, flag string) (Runtime, error) {
	s, err := ReadSettings(home)
	if err != nil {
		return "", err
	}
	if flag == "" {
		return s.Runtime, nil
	}
	rt, err := ParseRuntime(flag)
	if err != nil {
		return "", err
	}
	if rt.strength() < s.Runtime.strength() {
		return "", exitcode.Errorf(exitcode.Usage, "--runtime %s is weaker than the runtime %s the sandbox settings %q require: drop the flag, or change the setting with 'repro sandbox runtime %s'",
			rt, s.Runtime, layout.Home(home).SandboxSettings(), rt)
	}
	return rt, nil
}

package main

import (
	"io"
	"time"

	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/spf13/cobra"
)

func init() { register(newSandboxCommand) }

func newSandboxCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Check and use the Docker sandbox that runs generated code",
	}
	cmd.AddCommand(newSandboxCheckCommand(g), newSandboxRunCommand(g), newSandboxRuntimeCommand(g))
	return cmd
}

func newSandboxRuntimeCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "runtime [runc|runsc]",
		Short: "Show or set the runtime every sandboxed run must use",
		Long: `runtime prints the sandbox runtime the next sandboxed run uses (stdout)
and why (stderr), or sets it in REPRO_HOME. A --runtime flag may ask for a
stronger runtime than the setting, never a weaker one (exit 2).

With no runtime set, the host decides: runsc where the engine's runc has an
open known container escape (Debian bookworm's runc 1.1.5 has three), runc
elsewhere. runsc runs each container under gVisor, whose user-space kernel
serves the program's system calls; a HumanEval+ scoring run takes about
1.6-1.75x its time under runc. A run under runsc never falls back to runc:
without runsc registered with the engine (bash scripts/deps.sh runsc), or
while runsc cannot hold every control of the policy, it stops with exit 3.
A run under a runc with open known escapes, by the setting or the flag,
needs the trust file's waiver of each (image.runtime_waivers, as for the
production profile), recorded in the run; without it, exit 3.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := sandbox.ShowRuntime(cmd.Context(), g.home, args)
			if err != nil {
				return err
			}
			t := g.term
			t.Printf("%s\n", rt.Runtime)
			if rt.Note != "" {
				t.Notef("%s", rt.Note)
			}
			return nil
		},
	}
}

// sandboxCheckOptions are the flags of repro sandbox check.
type sandboxCheckOptions struct {
	runtime string
}

func newSandboxCheckCommand(g *globalOptions) *cobra.Command {
	var o sandboxCheckOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Print the engine's facts and self-test the sandbox policy",
		Long: `check prints the engine, containerd, runc and kernel versions, the cgroup
version, the seccomp profile digest and the pinned evaluator image, then runs a
short probe under the policy and reports each control (no network, read-only
root, no capabilities, no-new-privileges, seccomp, limits, ...) and that the
kernel the program sees is the one the runtime implies (the host's under runc,
gVisor's under runsc). The image is first checked against the trust file's
image policy (--trust, default REPRO_HOME/trust.json; docs/supply-chain.md),
the runtime included; no probe starts before it passes.

On connecting to the engine, check (like every sandboxed command) removes
the sandbox containers whose repro process is known to be gone (killed
outright), one line each on stderr; --json lists them as reaped_containers
(docs/sandbox.md).

Exit status 3 when the engine, the image pin or any control is missing, or the
policy's scan or runtime is not met; 4 for a missing or bad image signature
where the policy requires one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			rep, admitted, err := imagetrust.CheckSandbox(cmd.Context(), g.home,
				imagetrust.Options{TrustPath: g.trust, Trees: wire.SBOMTrees(), Runtime: o.runtime},
				func(n string) { t.Notef("%s", n) }, func(w string) { t.Warnf("%s", w) })
			if rep == nil {
				return err
			}
			rep.WriteText(t.Human())
			if admitted != nil {
				admitted.WriteText(t.Human())
			}
			if g.json {
				if jerr := t.Document(rep); jerr != nil {
					return jerr
				}
			}
			return err
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	g.trustFlag(cmd, trustFlagHelp)
	cmd.Flags().StringVar(&o.runtime, "runtime", "", runtimeFlagUsage)
	return cmd
}

const runtimeFlagUsage = "sandbox runtime, runc or runsc (default: the REPRO_HOME setting, see 'repro sandbox runtime'); never weaker than the setting"

// trustFlagHelp describes --trust wherever a sandboxed run starts.
const trustFlagHelp = "trust file whose image policy must admit the image (default REPRO_HOME/trust.json when present)"

// sandboxRunOptions are the flags of repro sandbox run.
type sandboxRunOptions struct {
	deadline time.Duration
	runtime  string
}

func newSandboxRunCommand(g *globalOptions) *cobra.Command {
	var opts sandboxRunOptions
	cmd := &cobra.Command{
		Use:   "run [--deadline D] -- PROGRAM [ARG...]",
		Short: "Run a program in the evaluator sandbox and report its outcome",
		Long: `run starts a fresh sandbox container from the pinned evaluator image, runs
PROGRAM in it under the fixed policy and default limits, prints its (capped)
output and its outcome, and removes the container. SIGINT or SIGTERM removes
the container before repro exits.

Exit status 0 when the program exited 0 within its deadline, 1 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			o, err := imagetrust.RunProgram(cmd.Context(), g.home, imagetrust.RunRequest{
				Options: imagetrust.Options{TrustPath: g.trust, Trees: wire.SBOMTrees(), Runtime: opts.runtime},
				Cmd:     args, Deadline: opts.deadline, Note: func(n string) { t.Notef("%s", n) },
			})
			if o == nil {
				return err
			}
			if g.json {
				jerr := t.Document(struct {
					*sandbox.Outcome
					Stdout string `json:"stdout"`
					Stderr string `json:"stderr"`
				}{o, string(o.Stdout), string(o.Stderr)})
				if jerr != nil {
					return jerr
				}
			} else {
				// The program's output as text, escaped but its lines; the
				// note below starts a line of its own.
				for _, out := range []struct {
					w io.Writer
					b []byte
				}{{t.Human(), o.Stdout}, {t.Stderr(), o.Stderr}} {
					if out.w.Write(out.b); len(out.b) > 0 && out.b[len(out.b)-1] != '\n' {
						out.w.Write([]byte("\n"))
					}
				}
				t.Notef("exit %d signal %q timed out %v oom %v output cap hit %v wall %v cpu %v peak memory %d",
					o.ExitCode, o.Signal, o.TimedOut, o.OOMKilled, o.OutputCapHit, o.Wall.Round(time.Millisecond), o.CPU.Round(time.Millisecond), o.PeakMemory)
			}
			return err
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().DurationVar(&opts.deadline, "deadline", time.Minute, "wall-clock deadline, at most 10m")
	g.trustFlag(cmd, trustFlagHelp)
	cmd.Flags().StringVar(&opts.runtime, "runtime", "", runtimeFlagUsage)
	return cmd
}

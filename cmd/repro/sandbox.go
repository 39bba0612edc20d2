package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/humaneval"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/ui"
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
			t := g.term
			home := g.home
			if len(args) == 1 {
				rt, err := sandbox.ParseRuntime(args[0])
				if err != nil {
					return err
				}
				if err := sandbox.WriteSettings(home, sandbox.Settings{Runtime: rt}); err != nil {
					return err
				}
			}
			s, err := sandbox.ReadSettings(home)
			if err != nil {
				return err
			}
			if s.Runtime != "" {
				t.Printf("%s\n", s.Runtime)
				if s.Runtime == sandbox.Runc {
					t.Notef("a run under runc needs the trust file's waiver of each open known escape of the engine's runc, where it has any")
				}
				return nil
			}
			e, err := sandbox.ConnectChosen(cmd.Context(), home, "")
			if err != nil {
				return err
			}
			defer e.Close()
			c := e.RuntimeFacts().Choice
			t.Printf("%s\n", c.Runtime)
			t.Notef("no runtime is set in REPRO_HOME: %s", c.Reason)
			return nil
		},
	}
}

func newSandboxCheckCommand(g *globalOptions) *cobra.Command {
	var (
		runtime string
	)
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
			ctx := cmd.Context()
			home := g.home
			e, err := sandbox.ConnectChosen(ctx, home, runtime)
			if err != nil {
				return err
			}
			defer e.Close()
			reaped := notifyReaped(t, e)
			facts, err := e.HostFacts(ctx)
			if err != nil {
				return exitcode.New(exitcode.Precondition, err)
			}
			for _, w := range facts.Warnings {
				t.Warnf("%s", w)
			}
			rep := sandbox.CheckReport{Host: facts, Reaped: reaped}
			img, admitted, imgErr := imagetrust.Verify(ctx, e, home, imagetrust.Options{TrustPath: g.trust, Trees: humaneval.SBOMTrees()})
			if imgErr == nil {
				rep.Host.Image = &img
				rep.ImageVerification = admitted
				rep.Controls, err = e.SelfTest(ctx, img)
				if err != nil {
					return exitcode.New(exitcode.Precondition, fmt.Errorf("sandbox self-test failed: %w", err))
				}
			}
			rep.OK = imgErr == nil
			for _, c := range rep.Controls {
				rep.OK = rep.OK && c.OK
			}
			rep.WriteText(t.Human())
			if admitted != nil {
				admitted.WriteText(t.Human())
			}
			if g.json {
				if err := t.Document(rep); err != nil {
					return err
				}
			}
			if imgErr != nil {
				return imgErr
			}
			if !rep.OK {
				return exitcode.Errorf(exitcode.Precondition, "the sandbox policy is not in force on this host: see the controls marked FAIL")
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	g.trustFlag(cmd, trustFlagHelp)
	cmd.Flags().StringVar(&runtime, "runtime", "", runtimeFlagUsage)
	return cmd
}

// notifyReaped tells, one line each, of the containers e removed on
// connecting because the repro process that made them is gone, and
// returns them.
func notifyReaped(t *ui.Terminal, e *sandbox.Engine) []sandbox.Reaped {
	r := e.Reaped()
	for _, c := range r {
		t.Notef("repro: %s", c)
	}
	return r
}

const runtimeFlagUsage = "sandbox runtime, runc or runsc (default: the REPRO_HOME setting, see 'repro sandbox runtime'); never weaker than the setting"

// trustFlagHelp describes --trust wherever a sandboxed run starts.
const trustFlagHelp = "trust file whose image policy must admit the image (default REPRO_HOME/trust.json when present)"

func newSandboxRunCommand(g *globalOptions) *cobra.Command {
	var (
		deadline time.Duration
		runtime  string
	)
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
			ctx := cmd.Context()
			if deadline <= 0 || deadline > 10*time.Minute {
				return exitcode.Errorf(exitcode.Usage, "--deadline %v: must be within (0, 10m]", deadline)
			}
			home := g.home
			e, img, _, err := imagetrust.Open(ctx, home, imagetrust.Options{TrustPath: g.trust, Trees: humaneval.SBOMTrees(), Runtime: runtime})
			if err != nil {
				return err
			}
			defer e.Close()
			notifyReaped(t, e)
			l := sandbox.DefaultLimits()
			l.Deadline = deadline
			o, err := e.Run(ctx, sandbox.Spec{Image: img, Cmd: args, Limits: l}, nil)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return exitcode.Errorf(exitcode.Negative, "interrupted: the sandbox container was removed")
				}
				return err
			}
			if g.json {
				err = t.Document(struct {
					*sandbox.Outcome
					Stdout string `json:"stdout"`
					Stderr string `json:"stderr"`
				}{o, string(o.Stdout), string(o.Stderr)})
				if err != nil {
					return err
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
			if o.ExitCode != 0 || o.TimedOut || o.OOMKilled {
				return exitcode.Errorf(exitcode.Negative, "the program did not succeed")
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().DurationVar(&deadline, "deadline", time.Minute, "wall-clock deadline, at most 10m")
	g.trustFlag(cmd, trustFlagHelp)
	cmd.Flags().StringVar(&runtime, "runtime", "", runtimeFlagUsage)
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/humaneval"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/store"
	"github.com/spf13/cobra"
)

func init() { register(newSandboxCommand) }

// openPinnedSandbox connects to the engine and returns it with the image
// pinned under home (exit 3 when either is missing, 4 when the engine's
// image differs from the pin), with the digest of the image's SBOM (made
// now for a pin that has none). The caller closes the engine.
func openPinnedSandbox(ctx context.Context, home string) (*sandbox.Engine, sandbox.Image, error) {
	e, err := sandbox.Connect(ctx)
	if err != nil {
		return nil, sandbox.Image{}, err
	}
	img, err := sandbox.PinnedImage(ctx, e, home)
	if err != nil {
		e.Close()
		return nil, sandbox.Image{}, err
	}
	sbom, err := sandbox.ImageSBOM(ctx, e, home, imageTrees())
	if err != nil {
		e.Close()
		return nil, sandbox.Image{}, err
	}
	img.SBOMDigest = sbom.Digest.String()
	return e, img, nil
}

// imageTrees are the trees the image's SBOM lists besides its packages:
// the HumanEval harness that every sandboxed HumanEval run mounts.
func imageTrees() []sandbox.SBOMTree {
	return []sandbox.SBOMTree{{Name: "repro-humaneval-harness", Digest: humaneval.HarnessDigest}}
}

func newSandboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Check and use the Docker sandbox that runs generated code",
	}
	cmd.AddCommand(newSandboxCheckCommand(), newSandboxRunCommand())
	return cmd
}

type sandboxCheckReport struct {
	OK       bool              `json:"ok"`
	Host     sandbox.HostFacts `json:"host"`
	Controls []sandbox.Control `json:"controls"`
}

func newSandboxCheckCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Print the engine's facts and self-test the sandbox policy",
		Long: `check prints the engine, containerd, runc and kernel versions, the cgroup
version, the seccomp profile digest and the pinned evaluator image, then runs a
short probe under the policy and reports each control (no network, read-only
root, no capabilities, no-new-privileges, seccomp, limits, ...).

Exit status 3 when the engine, the image pin or any control is missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			home, err := store.DefaultHome()
			if err != nil {
				return err
			}
			e, err := sandbox.Connect(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			facts, err := e.HostFacts(ctx)
			if err != nil {
				return exitcode.New(exitcode.Precondition, err)
			}
			human := stdout(cmd)
			if asJSON {
				human = cmd.ErrOrStderr()
			}
			for _, w := range facts.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			rep := sandboxCheckReport{Host: facts}
			img, imgErr := sandbox.PinnedImage(ctx, e, home)
			if imgErr == nil {
				rep.Host.Image = &img
				rep.Controls, err = e.SelfTest(ctx, img)
				if err != nil {
					return exitcode.New(exitcode.Precondition, fmt.Errorf("sandbox self-test failed: %w", err))
				}
			}
			rep.OK = imgErr == nil
			for _, c := range rep.Controls {
				rep.OK = rep.OK && c.OK
			}
			printFacts(human, rep)
			if asJSON {
				if err := writeJSON(stdout(cmd), rep); err != nil {
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document on stdout")
	return cmd
}

func printFacts(w interface{ Write([]byte) (int, error) }, rep sandboxCheckReport) {
	f := rep.Host
	fmt.Fprintf(w, "engine      %s (API %s)\n", f.EngineVersion, f.APIVersion)
	fmt.Fprintf(w, "containerd  %s\n", f.ContainerdVersion)
	fmt.Fprintf(w, "runc        %s\n", f.RuncVersion)
	fmt.Fprintf(w, "kernel      %s (%s)\n", f.Kernel, f.OperatingSystem)
	fmt.Fprintf(w, "cgroup      v%s, %s driver\n", f.CgroupVersion, f.CgroupDriver)
	fmt.Fprintf(w, "core        %s\n", f.CorePattern)
	fmt.Fprintf(w, "seccomp     %s\n", f.SeccompDigest)
	if f.Image != nil {
		fmt.Fprintf(w, "image       %s\n            manifest %s\n", f.Image.ID, f.Image.ManifestDigest)
	} else {
		fmt.Fprintf(w, "image       none pinned\n")
	}
	for _, c := range rep.Controls {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-18s %s\n", mark, c.Name, c.Detail)
	}
}

func newSandboxRunCommand() *cobra.Command {
	var (
		asJSON   bool
		deadline time.Duration
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
			ctx := cmd.Context()
			if deadline <= 0 || deadline > 10*time.Minute {
				return exitcode.Errorf(exitcode.Usage, "--deadline %v: must be within (0, 10m]", deadline)
			}
			home, err := store.DefaultHome()
			if err != nil {
				return err
			}
			e, img, err := openPinnedSandbox(ctx, home)
			if err != nil {
				return err
			}
			defer e.Close()
			l := sandbox.DefaultLimits()
			l.Deadline = deadline
			o, err := e.Run(ctx, sandbox.Spec{Image: img, Cmd: args, Limits: l}, nil)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return exitcode.Errorf(exitcode.Negative, "interrupted: the sandbox container was removed")
				}
				return err
			}
			if asJSON {
				err = writeJSON(stdout(cmd), struct {
					*sandbox.Outcome
					Stdout string `json:"stdout"`
					Stderr string `json:"stderr"`
				}{o, string(o.Stdout), string(o.Stderr)})
				if err != nil {
					return err
				}
			} else {
				stdout(cmd).Write(o.Stdout)
				cmd.ErrOrStderr().Write(o.Stderr)
				fmt.Fprintf(cmd.ErrOrStderr(), "exit %d signal %q timed out %v oom %v output cap hit %v wall %v cpu %v peak memory %d\n",
					o.ExitCode, o.Signal, o.TimedOut, o.OOMKilled, o.OutputCapHit, o.Wall.Round(time.Millisecond), o.CPU.Round(time.Millisecond), o.PeakMemory)
			}
			if o.ExitCode != 0 || o.TimedOut || o.OOMKilled {
				return exitcode.Errorf(exitcode.Negative, "the program did not succeed")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document on stdout")
	cmd.Flags().DurationVar(&deadline, "deadline", time.Minute, "wall-clock deadline, at most 10m")
	return cmd
}

package imagetrust

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
)

// reapedNotes tells note, one line each, of the containers e removed on
// connecting because the repro process that made them is gone, and
// returns them.
func reapedNotes(e *sandbox.Engine, note func(string)) []sandbox.Reaped {
	r := e.Reaped()
	for _, c := range r {
		if note != nil {
			note(fmt.Sprintf("repro: %s", c))
		}
	}
	return r
}

// CheckSandbox is `repro sandbox check`: it connects to the engine with
// the runtime o.Runtime asks for (sandbox.ConnectChosen), tells note of
// each container it reaped and warn of each warning of the host's facts,
// checks the pinned image against the trust file's image policy (Verify,
// with o.TrustPath and o.Trees) and, only when it passes, runs the
// sandbox's self-test under the policy.
//
// No engine, no host facts or a self-test that cannot run return no
// report and their error (the last two as exit 3). Otherwise CheckSandbox
// returns the report (OK only when the image passed and every control
// holds), what the image policy admitted (nil when it did not), and nil,
// the image's error, or a precondition error when a control failed.
func CheckSandbox(ctx context.Context, home string, o Options, note, warn func(string)) (*sandbox.CheckReport, *Verification, error) {
	e, err := sandbox.ConnectChosen(ctx, home, o.Runtime)
	if err != nil {
		return nil, nil, err
	}
	defer e.Close()
	reaped := reapedNotes(e, note)
	facts, err := e.HostFacts(ctx)
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Precondition, err)
	}
	for _, w := range facts.Warnings {
		if warn != nil {
			warn(w)
		}
	}
	rep := &sandbox.CheckReport{Host: facts, Reaped: reaped}
	img, admitted, imgErr := Verify(ctx, e, home, Options{TrustPath: o.TrustPath, Trees: o.Trees})
	if imgErr == nil {
		rep.Host.Image = &img
		rep.ImageVerification = admitted
		rep.Controls, err = e.SelfTest(ctx, img)
		if err != nil {
			return nil, nil, exitcode.New(exitcode.Precondition, fmt.Errorf("sandbox self-test failed: %w", err))
		}
	}
	rep.OK = imgErr == nil
	for _, c := range rep.Controls {
		rep.OK = rep.OK && c.OK
	}
	switch {
	case imgErr != nil:
		return rep, admitted, imgErr
	case !rep.OK:
		return rep, admitted, exitcode.Errorf(exitcode.Precondition, "the sandbox policy is not in force on this host: see the controls marked FAIL")
	}
	return rep, admitted, nil
}

// RunRequest is what `repro sandbox run` runs: Cmd in the pinned image,
// under the default limits with Deadline, on the engine and image Open
// gives for Options (its TrustPath, Trees and Runtime).
type RunRequest struct {
	Options
	Cmd      []string
	Deadline time.Duration
	// Note, if set, is told of each container reaped on connecting.
	Note func(string)
}

// RunProgram is `repro sandbox run`: a deadline outside (0, 10m] is a
// usage error, checked first; then the engine and image come from Open
// (their errors returned as they are), and the program runs in a fresh
// container that is removed afterwards. An interrupt (ctx cancelled) is
// exit 1 with no outcome. RunProgram returns the outcome and nil when the
// program exited 0 within its deadline and memory, else the outcome and an
// exit 1 error.
func RunProgram(ctx context.Context, home string, r RunRequest) (*sandbox.Outcome, error) {
	if r.Deadline <= 0 || r.Deadline > 10*time.Minute {
		return nil, exitcode.Errorf(exitcode.Usage, "--deadline %v: must be within (0, 10m]", r.Deadline)
	}
	e, img, _, err := Open(ctx, home, Options{TrustPath: r.TrustPath, Trees: r.Trees, Runtime: r.Runtime})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	reapedNotes(e, r.Note)
	l := sandbox.DefaultLimits()
	l.Deadline = r.Deadline
	o, err := e.Run(ctx, sandbox.Spec{Image: img, Cmd: r.Cmd, Limits: l}, nil)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, exitcode.Errorf(exitcode.Negative, "interrupted: the sandbox container was removed")
		}
		return nil, err
	}
	if o.ExitCode != 0 || o.TimedOut || o.OOMKilled {
		return o, exitcode.Errorf(exitcode.Negative, "the program did not succeed")
	}
	return o, nil
}

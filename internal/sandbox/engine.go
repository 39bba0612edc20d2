package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/exitcode"
)

// Labels set on every container and results volume this package creates.
const (
	// LabelKey marks a container or volume as created by repro's sandbox.
	LabelKey = "org.reprolab.repro.sandbox"
	// LabelDeadline holds the Unix time (seconds) after which the object
	// has outlived its run and may be removed by any repro process.
	LabelDeadline = "org.reprolab.repro.deadline"
	// LabelOwner holds the process ID of the repro process that created it
	// (LabelOwnerProcess names that process exactly).
	LabelOwner  = "org.reprolab.repro.owner"
	labelPrefix = "org.reprolab.repro."
)

// sweepGrace is added to a run's deadline in its label, leaving the owner
// time to kill, read back and remove the container itself before another
// process's sweep may.
const sweepGrace = 10 * time.Second

// cleanupTimeout bounds the kill and remove calls made after a run, which
// use a context of their own so that they run even when the caller's
// context was cancelled (SIGINT, SIGTERM).
const cleanupTimeout = 30 * time.Second

// Engine is a connection to the local Docker engine. It remembers the
// containers it created until they are removed; Close removes any that are
// left. An Engine is safe for concurrent use.
type Engine struct {
	cli     *client.Client
	runtime RuntimeFacts

	mu     sync.Mutex
	live   map[string]string // container ID -> results volume name ("" if none)
	reaped []Reaped          // containers Sweep removed before their deadline

	// alter, when set, changes the policy of every container after it was
	// built. Only the conformance meta-test sets it, to prove that the
	// hostile suite notices a missing control; nothing outside the
	// package's tests can reach it.
	alter func(*policy)
}

// Connect talks to the local Docker engine, configured as the docker CLI is
// (DOCKER_HOST, else the local socket), negotiating the API version, and
// sweeps containers left behind by dead runners (see Sweep). Its containers
// run under runc. An engine that does not answer is an
// exitcode.Precondition error.
func Connect(ctx context.Context) (*Engine, error) { return ConnectRuntime(ctx, Runc) }

// ConnectRuntime is Connect with the runtime every container of the Engine
// runs under. A runtime the engine does not have, or has without the
// arguments the policy needs, is an exitcode.Precondition error: nothing
// falls back to another runtime.
func ConnectRuntime(ctx context.Context, rt Runtime) (*Engine, error) {
	if _, err := ParseRuntime(string(rt)); err != nil {
		return nil, err
	}
	cli, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	return connect(ctx, cli, RuntimeChoice{Runtime: rt, By: "caller"})
}

// ConnectChosen connects to the engine with the runtime DecideRuntime picks
// from the sandbox settings of home, the --runtime flag ("" for none) and
// the engine's runc, and records the choice in RuntimeFacts().Choice.
// Sandboxed runs of the commands connect so.
func ConnectChosen(ctx context.Context, home, flag string) (*Engine, error) {
	s, err := ReadSettings(home)
	if err != nil {
		return nil, err
	}
	if flag != "" {
		if _, err := checkFlag(s, flag); err != nil {
			return nil, err
		}
	}
	cli, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	c, err := DecideRuntime(s, flag, EngineRunc(ctx, cli))
	if err != nil {
		cli.Close()
		return nil, err
	}
	return connect(ctx, cli, c)
}

// dial sets up a client of the local engine and checks that it answers.
func dial(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv) // negotiates the API version by default
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "failed to set up the docker client: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, exitcode.Errorf(exitcode.Precondition,
			"the docker engine at %s does not answer (%v): install it (apt-get install docker.io) and start it (setsid dockerd >/var/log/dockerd.log 2>&1 &)",
			cli.DaemonHost(), err)
	}
	return cli, nil
}

// connect makes the Engine of cli for the chosen runtime.
func connect(ctx context.Context, cli *client.Client, c RuntimeChoice) (*Engine, error) {
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rf, err := checkRuntime(pctx, cli, c.Runtime)
	if err != nil {
		cli.Close()
		return nil, err
	}
	rf.Choice = &c
	e := &Engine{cli: cli, runtime: rf, live: make(map[string]string)}
	// Containers whose runner died go first; a failed sweep does not stop
	// this run, the next start-up tries again.
	e.Sweep(ctx)
	return e, nil
}

// EngineRunc judges the engine's runc (the version the engine reports,
// the binary it has registered) against the known escapes; nil when the
// engine does not say.
func EngineRunc(ctx context.Context, cli *client.Client) *RuntimeAssessment {
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return nil
	}
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil
	}
	version := ""
	for _, c := range v.Components {
		if strings.ToLower(c.Name) == "runc" {
			version = c.Version
		}
	}
	if version == "" {
		version = info.Info.RuncCommit.ID
	}
	if version == "" {
		return nil
	}
	path := "runc"
	if r, ok := info.Info.Runtimes[string(Runc)]; ok && r.Path != "" {
		path = r.Path
	}
	return AssessRuntime("/", Runc, path, version)
}

// Runtime returns the runtime the Engine's containers run under.
func (e *Engine) Runtime() Runtime { return e.runtime.Name }

// RuntimeFacts returns what the Engine knows of its runtime.
func (e *Engine) RuntimeFacts() RuntimeFacts { return e.runtime }

// Client returns the underlying engine client.
func (e *Engine) Client() *client.Client { return e.cli }

// Close kills and removes every container this Engine created and has not
// removed yet, then closes the connection.
func (e *Engine) Close() error {
	e.mu.Lock()
	ids := make(map[string]string, len(e.live))
	for id, v := range e.live {
		ids[id] = v
	}
	e.mu.Unlock()
	var errs []error
	for id, vol := range ids {
		if err := e.destroy(id, vol); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.cli.Close())
	return errors.Join(errs...)
}

func (e *Engine) track(id, vol string) {
	e.mu.Lock()
	e.live[id] = vol
	e.mu.Unlock()
}

// destroy kills the container, removes it and its results volume, by ID,
// with retries, whatever state the caller's context is in.
func (e *Engine) destroy(id, vol string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, _ = e.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
		_, err = e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			err = nil
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100*(attempt+1)) * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("failed to remove container %s: %w", shortID(id), err)
	}
	if vol != "" {
		if _, verr := e.cli.VolumeRemove(ctx, vol, client.VolumeRemoveOptions{Force: true}); verr != nil && !cerrdefs.IsNotFound(verr) {
			return fmt.Errorf("failed to remove results volume %s: %w", vol, verr)
		}
	}
	e.mu.Lock()
	delete(e.live, id)
	e.mu.Unlock()
	return nil
}

// Reaped is a sandbox container that Sweep removed before its deadline
// because the repro process that created it is gone.
type Reaped struct {
	// ID is the container's ID.
	ID string `json:"id"`
	// OwnerPID is the process ID of the repro process that created it.
	OwnerPID int `json:"owner_pid"`
	// Reason says how the owner is known to be gone: it has exited, or its
	// pid now names another process.
	Reason string `json:"reason"`
}

// String is the one line that tells people of the removal.
func (r Reaped) String() string {
	return fmt.Sprintf("removed sandbox container %s left running by a repro process that is gone (%s)", shortID(r.ID), r.Reason)
}

// Sweep removes every labelled container and results volume whose deadline
// has passed, whoever created it: they belong to runs whose runner died.
// It also removes, at once, those whose LabelOwnerProcess names a process
// of this host that is gone (killed outright, out of memory): see
// orphanReason for when that is decided, and [Engine.Reaped] for what was
// so removed. It returns how many containers it removed. Connect calls it.
func (e *Engine) Sweep(ctx context.Context) (int, error) {
	now := time.Now().Unix()
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelKey),
	})
	if err != nil {
		return 0, fmt.Errorf("failed to list sandbox containers: %w", err)
	}
	n := 0
	var errs []error
	for _, c := range list.Items {
		reason := ""
		if !expired(c.Labels, now) {
			if reason = orphanReason(c.Labels); reason == "" {
				continue
			}
		}
		if err := e.destroy(c.ID, ""); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		if reason != "" {
			pid, _ := strconv.Atoi(c.Labels[LabelOwner])
			e.mu.Lock()
			e.reaped = append(e.reaped, Reaped{ID: c.ID, OwnerPID: pid, Reason: reason})
			e.mu.Unlock()
		}
	}
	vols, err := e.cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", LabelKey)})
	if err != nil {
		errs = append(errs, fmt.Errorf("failed to list sandbox volumes: %w", err))
	} else {
		for _, v := range vols.Items {
			if !expired(v.Labels, now) && orphanReason(v.Labels) == "" {
				continue
			}
			if _, err := e.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
				errs = append(errs, fmt.Errorf("failed to remove sandbox volume %s: %w", v.Name, err))
			}
		}
	}
	return n, errors.Join(errs...)
}

// Reaped returns the containers this Engine's sweeps removed before their
// deadline because their owner was gone, in the order removed; never nil.
func (e *Engine) Reaped() []Reaped {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Reaped{}, e.reaped...)
}

// expired reports whether labels carry a deadline before now. A missing or
// malformed deadline counts as expired: such an object was not made by a
// working runner.
func expired(labels map[string]string, now int64) bool {
	d, err := strconv.ParseInt(labels[LabelDeadline], 10, 64)
	return err != nil || d < now
}

func baseLabels(deadline time.Time, extra map[string]string) (map[string]string, error) {
	l := make(map[string]string, len(extra)+4)
	for k, v := range extra {
		if len(k) >= len(labelPrefix) && k[:len(labelPrefix)] == labelPrefix {
			return nil, fmt.Errorf("sandbox label %q uses the reserved prefix %s", k, labelPrefix)
		}
		l[k] = v
	}
	l[LabelKey] = "1"
	l[LabelDeadline] = strconv.FormatInt(deadline.Add(sweepGrace).Unix()+1, 10)
	l[LabelOwner] = strconv.Itoa(os.Getpid())
	if me, err := self(); err == nil {
		l[LabelOwnerProcess] = me.String()
	}
	return l, nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

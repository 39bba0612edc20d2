package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/sys/unix"
)

// Mount binds a host path into the container, always read-only.
type Mount struct {
	Source string // absolute host path of a regular file or a folder
	Target string // absolute path in the container
}

// Spec describes one program to run in a fresh container.
type Spec struct {
	Image    Image
	Cmd      []string          // program and arguments; no shell is involved
	Env      map[string]string // added to the fixed base environment; base keys cannot be changed
	ReadOnly []Mount           // datasets, inputs, harness tree, each sample file on its own
	Dir      string            // working folder in the container; "/" when empty
	Limits   Limits
	Stdin    bool              // keep the program's stdin open for a streaming protocol
	Results  bool              // mount a size-capped noexec results folder at /results
	Labels   map[string]string // extra labels; the org.reprolab.repro. prefix is reserved
	// Samples, when set, are bound read-only file by file under SamplesDir
	// and checked when the program has ended: any change makes Run and
	// Wait return an exitcode.Integrity error (with the outcome).
	Samples *Workspace
}

// SamplesDir is where Spec.Samples appear in the container.
const SamplesDir = "/workspace/samples"

// Outcome is what the runner observed of one program. Only TimedOut,
// OOMKilled, OutputCapHit, Wall, CPU and PeakMemory are established outside
// the program's reach; ExitCode and Signal are what the program's process
// reported and are never proof of success.
type Outcome struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"` // from an exit status of 128+n, e.g. "SIGKILL"
	// TimedOut: the deadline passed and the runner killed the container.
	TimedOut bool `json:"timed_out"`
	// OOMKilled: the engine reports a kill by the cgroup's OOM killer.
	OOMKilled bool `json:"oom_killed"`
	// OutputCapHit: stdout or stderr went over Limits.OutputCap; the rest
	// was read and dropped.
	OutputCapHit bool `json:"output_cap_hit"`
	// ContainerEnded: the container stopped before the runner stopped it.
	ContainerEnded bool          `json:"container_ended"`
	Wall           time.Duration `json:"wall_ns"`
	CPU            time.Duration `json:"cpu_ns"`            // cgroup CPU time of the container, 0 if unknown
	PeakMemory     int64         `json:"peak_memory_bytes"` // cgroup peak, 0 if the cgroup does not give it
	Stdout         []byte        `json:"-"`                 // Run only, at most Limits.OutputCap
	Stderr         []byte        `json:"-"`                 // Run only, at most Limits.OutputCap
	Results        *Results      `json:"results,omitempty"` // Run with Spec.Results only
	ContainerID    string        `json:"container_id"`
	ResultsError   string        `json:"results_error,omitempty"`
}

// Container is a running sandbox with one program attached to the caller.
// Wait must be called (or the Engine closed) to remove it.
type Container struct {
	e        *Engine
	id       string
	vol      string
	spec     Spec
	execID   string
	conn     client.HijackedResponse
	stdout   *capBuffer
	stderr   *capBuffer
	started  time.Time
	demuxed  chan struct{}
	demuxErr error
	timer    *time.Timer
	// cgroup is the container's cgroup on the host, found at start
	// (cgroupErr says why not).
	cgroup    *liveCgroup
	cgroupErr error

	mu       sync.Mutex
	timedOut bool
	killed   bool
	snap     *stats // cgroup figures taken just before a deadline kill
	// streamCut: closeWhenStopped closed the attach stream of a stopped
	// container; the read error that follows is not the runner's.
	streamCut bool

	waitOnce sync.Once
	outcome  *Outcome
	waitErr  error
	// discard is closed by Discard: a Wait under way stops collecting the
	// outcome and removes the container.
	discard     chan struct{}
	discardOnce sync.Once
}

// ID returns the container's ID.
func (c *Container) ID() string { return c.id }

// Run runs one program in a fresh container and removes the container. If
// stdin is not nil and s.Stdin is set, it is copied to the program's stdin,
// which is then closed.
func (e *Engine) Run(ctx context.Context, s Spec, stdin io.Reader) (*Outcome, error) {
	c, err := e.start(ctx, s, true)
	if err != nil {
		return nil, err
	}
	if s.Stdin {
		go func() {
			if stdin != nil {
				io.Copy(c.conn.Conn, stdin)
			}
			c.conn.CloseWrite()
		}()
	}
	o, err := c.Wait(ctx)
	if o != nil {
		o.Stdout = c.stdout.bytes()
		o.Stderr = c.stderr.bytes()
	}
	return o, err
}

// Start starts a program in a fresh container and leaves its standard
// streams attached to the caller. The deadline runs from now.
func (e *Engine) Start(ctx context.Context, s Spec) (*Container, error) {
	return e.start(ctx, s, false)
}

// Stdin returns the program's stdin (Spec.Stdin must be set); Close closes
// it, which the program reads as end of input.
func (c *Container) Stdin() io.WriteCloser { return stdinWriter{c} }

// Stdout returns the program's stdout. It holds at most Limits.OutputCap
// bytes over the program's life; the rest is dropped. Writes by the
// program never wait for this reader.
func (c *Container) Stdout() io.Reader { return c.stdout }

// Stderr returns the program's stderr, capped like Stdout.
func (c *Container) Stderr() io.Reader { return c.stderr }

type stdinWriter struct{ c *Container }

func (w stdinWriter) Write(p []byte) (int, error) {
	if !w.c.spec.Stdin {
		return 0, errors.New("sandbox program was started without stdin")
	}
	return w.c.conn.Conn.Write(p)
}

func (w stdinWriter) Close() error { return w.c.conn.CloseWrite() }

func newName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (e *Engine) start(ctx context.Context, s Spec, keep bool) (c *Container, err error) {
	if len(s.Cmd) == 0 {
		return nil, errors.New("sandbox spec has no command")
	}
	if !s.Image.pinned {
		return nil, exitcode.Errorf(exitcode.Precondition, "sandbox image %q was not read from the pin: use PinnedImage or BuildImage", s.Image.ID)
	}
	if s.Samples != nil {
		if err := s.Samples.Check(); err != nil {
			return nil, err
		}
		s.ReadOnly = append(append([]Mount(nil), s.ReadOnly...), s.Samples.Mounts(SamplesDir)...)
	}
	if err := s.Limits.Validate(); err != nil {
		return nil, err
	}
	if err := e.verifyImage(ctx, s.Image); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(s.Limits.Deadline)
	labels, err := baseLabels(deadline, s.Labels)
	if err != nil {
		return nil, err
	}
	vol := ""
	if s.Results {
		vol = newName("repro-results-")
		if _, err := e.cli.VolumeCreate(ctx, client.VolumeCreateOptions{
			Name: vol, Driver: "local", DriverOpts: resultsVolumeOptions(s.Limits), Labels: labels,
		}); err != nil {
			return nil, fmt.Errorf("failed to create the results volume: %w", err)
		}
	}
	p, err := buildPolicy(s, e.runtime.Name, s.Image.ID, vol, labels)
	if err == nil && e.alter != nil {
		e.alter(p)
	}
	if err != nil {
		if vol != "" {
			e.cli.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{Force: true})
		}
		return nil, err
	}
	created, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: p.config, HostConfig: p.host, Name: newName("repro-sandbox-"),
	})
	if err != nil {
		if vol != "" {
			e.cli.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{Force: true})
		}
		return nil, fmt.Errorf("failed to create the sandbox container: %w", err)
	}
	e.track(created.ID, vol)
	defer func() {
		if err != nil {
			e.destroy(created.ID, vol)
		}
	}()
	if len(created.Warnings) > 0 {
		return nil, exitcode.Errorf(exitcode.Precondition, "the docker engine cannot apply the sandbox policy: %v", created.Warnings)
	}
	if _, err := e.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("failed to start the sandbox container: %w", err)
	}
	cmd, env, err := p.launch(s.Cmd, p.env)
	if err != nil {
		return nil, err
	}
	cg, cgErr := e.cgroupOf(ctx, created.ID)
	ex, err := e.cli.ExecCreate(ctx, created.ID, client.ExecCreateOptions{
		User:         p.execUser,
		AttachStdin:  s.Stdin,
		AttachStdout: true,
		AttachStderr: true,
		Env:          env,
		WorkingDir:   p.workdir,
		Cmd:          cmd,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the sandbox program: %w", err)
	}
	conn, err := e.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to start the sandbox program: %w", err)
	}
	c = &Container{
		e: e, id: created.ID, vol: vol, spec: s, execID: ex.ID, conn: conn.HijackedResponse,
		stdout: newCapBuffer(s.Limits.OutputCap, keep), stderr: newCapBuffer(s.Limits.OutputCap, keep),
		started: time.Now(), demuxed: make(chan struct{}), discard: make(chan struct{}), cgroup: cg, cgroupErr: cgErr,
	}
	c.timer = time.AfterFunc(s.Limits.Deadline, c.expire)
	go func() {
		c.demuxErr = demux(c.conn.Reader, c.stdout, c.stderr)
		c.stdout.close()
		c.stderr.close()
		close(c.demuxed)
	}()
	go c.closeWhenStopped()
	return c, nil
}

// stoppedGrace is how long the program's output may stay open after its
// container stopped.
const stoppedGrace = 2 * time.Second

// closeWhenStopped closes the program's attach stream once the container
// has stopped (killed at the deadline or by the caller, or ended) and the
// stream is still open stoppedGrace later. Under runsc the engine may keep
// an exec's stream open after its container was killed; without this the
// runner would wait on it for ever.
func (c *Container) closeWhenStopped() {
	for stopped := false; !stopped; {
		wr := c.e.cli.ContainerWait(context.Background(), c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-wr.Result:
			stopped = true
		case err := <-wr.Error:
			// Gone is stopped; any other error is asked again.
			if stopped = cerrdefs.IsNotFound(err); !stopped {
				select {
				case <-c.demuxed:
					return
				case <-time.After(time.Second):
				}
			}
		case <-c.demuxed:
			return
		}
	}
	select {
	case <-c.demuxed:
	case <-time.After(stoppedGrace):
		c.mu.Lock()
		c.streamCut = true
		c.mu.Unlock()
		c.conn.Close()
	}
}

// expire runs when the deadline passes: it records the cgroup figures and
// kills the container by ID.
func (c *Container) expire() {
	c.mu.Lock()
	c.timedOut = true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	st, _ := c.e.readStats(ctx, c.id)
	cancel()
	c.mu.Lock()
	c.snap = st
	c.mu.Unlock()
	c.e.kill(c.id)
}

func (e *Engine) kill(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	e.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
}

// Kill kills the container now; Wait then returns its outcome.
func (c *Container) Kill(ctx context.Context) error {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_, err := c.e.cli.ContainerKill(ctx, c.id, client.ContainerKillOptions{Signal: "KILL"})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("failed to kill sandbox container %s: %w", shortID(c.id), err)
	}
	return nil
}

// Discard kills and removes the container at once, without its outcome:
// for a caller that was stopped (Ctrl-C) and has no use for one. A Wait
// after it returns ErrDiscarded; a Wait under way stops collecting the
// outcome, removes the container and returns ErrDiscarded, and Discard
// returns once it has. It returns the removal's error; the Engine's Close
// and Sweep remove what it could not.
func (c *Container) Discard() error {
	c.discardOnce.Do(func() { close(c.discard) })
	c.waitOnce.Do(func() {
		c.conn.Close()
		c.outcome, c.waitErr = c.discarded()
	})
	if c.waitErr != ErrDiscarded && errors.Is(c.waitErr, ErrDiscarded) {
		return c.waitErr // the removal failed
	}
	return nil
}

// ErrDiscarded is Wait's error for a container its caller discarded.
var ErrDiscarded = errors.New("the sandbox container was discarded")

func (c *Container) discarding() bool {
	select {
	case <-c.discard:
		return true
	default:
		return false
	}
}

// discarded ends a Wait that Discard interrupted: the container is
// removed, and no outcome is collected.
func (c *Container) discarded() (*Outcome, error) {
	c.timer.Stop()
	if c.cgroup != nil {
		c.cgroup.close()
	}
	if err := c.e.destroy(c.id, c.vol); err != nil {
		return nil, errors.Join(ErrDiscarded, err)
	}
	return nil, ErrDiscarded
}

// Wait waits for the program to end or its deadline to pass, collects the
// outcome, kills the container and removes it. It always removes the
// container, also when ctx is cancelled (then it returns ctx's error). If
// Spec.Samples changed, it returns the outcome and an exitcode.Integrity
// error saying what changed.
func (c *Container) Wait(ctx context.Context) (*Outcome, error) {
	c.waitOnce.Do(func() { c.outcome, c.waitErr = c.wait(ctx) })
	return c.outcome, c.waitErr
}

func (c *Container) wait(ctx context.Context) (*Outcome, error) {
	defer c.conn.Close()
	select {
	case <-c.demuxed:
	case <-ctx.Done():
		c.timer.Stop()
		if err := c.e.destroy(c.id, c.vol); err != nil {
			return nil, errors.Join(ctx.Err(), err)
		}
		return nil, ctx.Err()
	case <-c.discard:
		return c.discarded()
	}
	wall := time.Since(c.started)
	c.timer.Stop()
	o := &Outcome{ContainerID: c.id, Wall: wall}
	cleanup := func() error { return c.e.destroy(c.id, c.vol) }
	if c.discarding() {
		return c.discarded()
	}

	// The attach stream ends when the program's output is closed; the exec
	// itself ends at the same time or very soon after.
	ictx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err := c.e.execExit(ictx, c.execID)
	if cerrdefs.IsNotFound(err) {
		// The engine dropped the exec with its stopped container (seen
		// under runsc): the program's own exit status is unknown.
		code, err = -1, nil
	}
	if err != nil {
		cleanup()
		return nil, err
	}
	o.ExitCode = code
	if code > 128 && code <= 128+64 {
		o.Signal = unix.SignalName(syscall.Signal(code - 128))
	}

	c.mu.Lock()
	o.TimedOut = c.timedOut
	snap := c.snap
	killedByCaller := c.killed
	c.mu.Unlock()
	running := false
	if inspect, err := c.e.cli.ContainerInspect(ictx, c.id, client.ContainerInspectOptions{}); err == nil && inspect.Container.State != nil {
		running = inspect.Container.State.Running
	}
	// After a kill the container may still show as running for a moment,
	// with its cgroup already gone: only a container nobody killed is read.
	if running && !o.TimedOut && !killedByCaller {
		if st, err := c.e.readStats(ictx, c.id); err == nil {
			snap = st
		}
		if c.spec.Results {
			res, err := c.e.readResultsFrom(ictx, c.id, c.spec.Limits)
			if err != nil {
				o.ResultsError = err.Error()
			}
			o.Results = res
		}
	} else if c.spec.Results {
		o.ResultsError = "the container stopped before its results could be read"
	}
	if snap != nil {
		o.CPU, o.PeakMemory = snap.cpu, snap.peak
	}
	o.ContainerEnded = !running && !o.TimedOut && !killedByCaller

	// The OOM killer's count, read on the host while the cgroup is still
	// there (under runc a killed program leaves its container running; under
	// runsc the kill takes the sandbox and the cgroup goes with it, and the
	// engine's record below is what tells).
	var oomKills int64
	if c.cgroup != nil {
		oomKills, _ = c.cgroup.oomKills()
		c.cgroup.close()
	}
	if c.discarding() {
		return c.discarded()
	}
	// Stop the container so that the engine records the OOM state, then
	// remove it.
	c.e.kill(c.id)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	wr := c.e.cli.ContainerWait(wctx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wr.Result:
	case <-wr.Error:
	case <-wctx.Done():
	}
	wcancel()
	// The engine's record, read with a context of its own: the one above
	// may be spent on a loaded host, and a failed read is no "not OOM".
	oom, err := c.e.oomKilled(c.id)
	if err != nil {
		cleanup()
		return nil, err
	}
	o.OOMKilled = oom || oomKills > 0
	o.OutputCapHit = c.stdout.capHit() || c.stderr.capHit()
	if err := cleanup(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	cut := c.streamCut
	c.mu.Unlock()
	if c.demuxErr != nil && !cut {
		return nil, c.demuxErr
	}
	if c.spec.Samples != nil {
		if err := c.spec.Samples.Check(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// oomKilled reads, once the engine has the container stopped, whether it
// records an OOM kill (State.OOMKilled, from the runtime's OOM event).
func (e *Engine) oomKilled(id string) (bool, error) {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		inspect, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		cancel()
		if err == nil && inspect.Container.State != nil {
			st := inspect.Container.State
			if !st.Running || attempt == 4 {
				return st.OOMKilled, nil
			}
			last = errors.New("the container still runs after it was killed")
		} else if err != nil {
			last = err
		}
		time.Sleep(time.Duration(200*(attempt+1)) * time.Millisecond)
	}
	return false, fmt.Errorf("failed to read the sandbox container's OOM state: %v", last)
}

// execExit waits until the exec has ended and returns its exit code.
func (e *Engine) execExit(ctx context.Context, execID string) (int, error) {
	delay := time.Millisecond
	for {
		r, err := e.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, fmt.Errorf("failed to inspect the sandbox program: %w", err)
		}
		if !r.Running {
			return r.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("sandbox program still running after its output closed: %w", ctx.Err())
		case <-time.After(delay):
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

type stats struct {
	cpu  time.Duration
	peak int64
}

// readStats takes one sample of the container's cgroup figures.
func (e *Engine) readStats(ctx context.Context, id string) (*stats, error) {
	r, err := e.cli.ContainerStats(ctx, id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&s); err != nil {
		return nil, err
	}
	if s.CPUStats.CPUUsage.TotalUsage == 0 {
		return nil, errors.New("the engine gave no cgroup figures")
	}
	return &stats{cpu: time.Duration(s.CPUStats.CPUUsage.TotalUsage), peak: int64(s.MemoryStats.MaxUsage)}, nil
}

// ReadResults reads the results folder of a running container back through
// the engine's archive API: regular files only, within the folder's caps.
func (c *Container) ReadResults(ctx context.Context) (*Results, error) {
	if !c.spec.Results {
		return nil, errors.New("sandbox container has no results folder")
	}
	return c.e.readResultsFrom(ctx, c.id, c.spec.Limits)
}

// ReadResult returns one regular file of the results folder of a running
// container. A name that is missing, or that is not a regular file within
// the caps, is an error.
func (c *Container) ReadResult(ctx context.Context, name string) ([]byte, error) {
	res, err := c.ReadResults(ctx)
	if err != nil {
		return nil, err
	}
	if b, ok := res.Files[name]; ok {
		return b, nil
	}
	for _, r := range res.Rejected {
		if len(r) > len(name) && r[:len(name)] == name && r[len(name)] == ':' {
			return nil, fmt.Errorf("result %s refused: %s", name, r[len(name)+2:])
		}
	}
	return nil, fmt.Errorf("result %s: not found in %s", name, ResultsDir)
}

func (e *Engine) readResultsFrom(ctx context.Context, id string, l Limits) (*Results, error) {
	r, err := e.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: ResultsDir})
	if err != nil {
		return nil, fmt.Errorf("failed to read the results folder: %w", err)
	}
	defer r.Content.Close()
	return readResults(r.Content, l.ResultsSize, l.ResultsInodes)
}

// verifyImage refuses an image reference that is not an image ID, or an ID
// the engine does not hold under that exact ID.
func (e *Engine) verifyImage(ctx context.Context, img Image) error {
	if _, err := digest.Parse(img.ID); err != nil || len(img.ID) != 71 {
		return exitcode.Errorf(exitcode.Precondition, "sandbox image %q is not an image ID (sha256:...): run 'repro image build'", img.ID)
	}
	got, err := e.cli.ImageInspect(ctx, img.ID)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return exitcode.Errorf(exitcode.Precondition, "the docker engine does not hold the evaluator image %s: run 'repro image build'", img.ID)
		}
		return fmt.Errorf("failed to inspect the evaluator image: %w", err)
	}
	if got.ID != img.ID {
		return exitcode.Errorf(exitcode.Integrity, "the engine's image %s does not match the pinned image ID %s", got.ID, img.ID)
	}
	return nil
}

// execAnother runs one more program in the running container, as the
// program user, and returns its exit code. It measures the cost of an exec
// against a fork server; the runner itself starts one program per container.
func (c *Container) execAnother(ctx context.Context, cmd []string) (int, error) {
	p, err := buildPolicy(c.spec, c.e.runtime.Name, c.spec.Image.ID, "", nil)
	if err == nil && c.e.alter != nil {
		c.e.alter(p)
	}
	if err != nil {
		return 0, err
	}
	cmd, env, err := p.launch(cmd, p.env)
	if err != nil {
		return 0, err
	}
	ex, err := c.e.cli.ExecCreate(ctx, c.id, client.ExecCreateOptions{
		User: p.execUser, AttachStdout: true, AttachStderr: true, Env: env, WorkingDir: p.workdir, Cmd: cmd,
	})
	if err != nil {
		return 0, err
	}
	conn, err := c.e.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := demux(conn.Reader, io.Discard, io.Discard); err != nil {
		return 0, err
	}
	return c.e.execExit(ctx, ex.ID)
}

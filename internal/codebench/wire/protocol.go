package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/strictjson"
)

// The supervisor's channel: every frame after the key carries a tag,
// HMAC-SHA256 under a key the host makes for each container and sends as
// the first frame, before the supervisor starts its zygote or any job (see
// supervisor.py). The supervisor's frames are numbered, so none can be
// dropped, replayed or reordered; the host's name their job.
const (
	// protocolVersion is the supervisor protocol this package speaks.
	protocolVersion = 9
	channelKeySize  = 32
	tagSize         = 32 // an HMAC-SHA256
	// maxJobHeader is the largest job header the supervisor takes
	// (MAX_HEADER); about 50 bytes per input.
	maxJobHeader = 1 << 20
)

var (
	hostDomain       = []byte("repro-host")
	supervisorDomain = []byte("repro-supervisor")
)

// Transport is one supervisor process in a sandbox: its stdin and stdout.
// Abort kills it now; Close waits for it to end, removes its container and
// reports the container's peak memory.
type Transport interface {
	io.Writer
	io.Reader
	Abort()
	// Discard ends the supervisor's container at once, without its
	// outcome (the run was stopped), and returns once it is removed.
	Discard()
	Close() (peakMemory int64, err error)
	// Stderr returns the start of what the supervisor wrote to stderr,
	// once it has ended (for error messages).
	Stderr() string
}

// cpuClock is a Transport whose container's CPU usage the host reads
// itself, from the container's cgroup (sandbox.Container.CPUUsage): the
// clock no process of a job can hide from.
type cpuClock interface {
	CPUUsage() (time.Duration, error)
}

// hostClockSlack is what the host's clock allows a job beyond its own
// limits: the supervisor's and the zygote's work for the job (the fork,
// relaying records, the sweep), which the container's clock counts too.
func hostClockSlack(budget time.Duration) time.Duration {
	return 500*time.Millisecond + budget/10
}

// frameClock reads the container's CPU usage at most once per
// clockRefresh, unless a reading must be fresh (the job's start).
type frameClock struct {
	clk  cpuClock
	at   time.Time
	last time.Duration
}

func (c *frameClock) read(now time.Time, fresh bool) (time.Duration, error) {
	if !fresh && !c.at.IsZero() && now.Sub(c.at) < clockRefresh {
		return c.last, nil
	}
	u, err := c.clk.CPUUsage()
	if err != nil {
		return 0, err
	}
	c.at, c.last = now, u
	return u, nil
}

// jobCPULimit is the most CPU time a job's own limits let it use from its
// start to its end: the list's limit (PhaseLimit), which the supervisor
// counts from the L frame, loading included, or, where smaller, the load
// allowance (which ends at the load mark) and the sum of its inputs'
// limits.
//
// An overrun (Job.Overrun) lets one input, the one that struck its limit,
// run on to Overrun times that limit, within the list's limit: the sum
// counts the largest limit that many times.
func jobCPULimit(j *Job) float64 {
	sum, most := j.FirstExtra, 0.0
	for _, l := range j.Limits {
		sum += l
		most = max(most, l)
	}
	if j.Overrun > 1 {
		sum += (j.Overrun - 1) * most
	}
	if !HostBudgetOwnLimits {
		// The allowance before the limits were bounded: the load
		// allowance on top of the list's limit.
		return j.FirstExtra + min(j.PhaseLimit, sum-j.FirstExtra)
	}
	return min(j.PhaseLimit, sum)
}

// hostBudget is the CPU time the host's clock allows a job from just
// before the host sends it to its end: its own limit (jobCPULimit), plus
// hostClockSlack for the supervisor's work, which the container's clock
// counts too.
func hostBudget(j *Job) time.Duration {
	b := time.Duration(jobCPULimit(j) * float64(time.Second))
	return b + hostClockSlack(b)
}

// procClockScale is how many times the load allowance and the list's
// limit the supervisor applies to its own job clock where that clock is
// gVisor's ("proc") and the host holds the job by the container's cgroup:
// gVisor advances a task's CPU clock by wall-time ticks while the task is
// runnable, so on a host with more runnable threads than CPUs it counts
// time the program spent waiting, and a loaded machine turned honest
// verdicts into timeouts. The host's clock counts only CPU time used, so
// it decides; the supervisor's limit stays as a backstop. (Per-input
// limits stay on the supervisor's clock: a fast clock can only stop an
// input early, never let it run long.)
const procClockScale = 8

// MaxClockScale is the largest clock_scale a host sets (procClockScale):
// a reader of a results file takes no larger one.
const MaxClockScale = procClockScale

// clockScale is the job header's clock_scale for a supervisor whose hello
// named clock, where the host reads the container's CPU usage (hostClock):
// procClockScale for gVisor's clock with the host's clock on, else 1.
func clockScale(clock string, hostClock bool) float64 {
	if (clock == "proc" || ForceClockScale) && hostClock {
		return procClockScale
	}
	return 1
}

// hostLoadBudget is the CPU time the host's clock allows a job from just
// before the host sends it to its load mark (the G frame): the load
// allowance, plus hostClockSlack; 0 where the host does not hold the loading (an EvalPlus
// job, which has no load mark, or a job without an allowance).
func hostLoadBudget(j *Job) time.Duration {
	if j.EvalPlus != nil || j.FirstExtra <= 0 || !HostLoadClockOn {
		return 0
	}
	b := time.Duration(j.FirstExtra * float64(time.Second))
	return b + hostClockSlack(b)
}

// Launcher starts a supervisor (python3 -I /harness/supervisor.py with the
// harness tree mounted read-only at /harness) in a fresh container.
type Launcher func(ctx context.Context) (Transport, error)

// Hello is the supervisor's first frame.
type Hello struct {
	Protocol   int    `json:"protocol"`
	Python     string `json:"python"`
	HexVersion int64  `json:"hexversion"`
	UID        int    `json:"uid"`
	// Clock is the supervisor's job clock: "cgroup" (the container's
	// cgroup less its own work) or "proc" (under gVisor, the sum over
	// /proc of gVisor's own clock, which counts a runnable task's wait for
	// a host CPU; see clockScale).
	Clock string `json:"clock"`
}

// job is one run of one program on one input list.
type Job struct {
	ID         int
	EntryPoint string
	Program    []byte
	Inputs     []json.RawMessage // the argument list of each input, as JSON
	Rebuild    string            // the harness's rebuild of the inputs (judge.TaskRules.Inputs), "" for none
	Limits     []float64         // seconds per input
	// Expect is, per input, the CPU seconds the canonical solution took
	// (nil where unknown): the supervisor sizes windows by it too, since
	// a list's heavy inputs are often its last.
	Expect     []float64
	FirstExtra float64 // CPU seconds allowed for loading the program, on top of input 0's limit
	PhaseLimit float64 // CPU seconds for the whole list
	WallFactor float64 // a child idle for this many times its CPU limits is stopped
	RecordCap  int     // bytes of one record
	ByteCap    int64   // bytes of all records
	Memory     int64   // address-space limit of the child
	FSize      int64   // file-size limit of the child
	// Exact releases the inputs to the child one at a time, each once the
	// previous one's result came: every result is then charged exactly the
	// CPU time from its own input's release (see the supervisor's
	// release of windows). The supervisor ends a job "inexact" where a
	// larger window leaves that open; codebench's runPhase then runs it
	// again so.
	Exact bool
	// Times asks the child for its own measure of each call's CPU time
	// (Record.Time), which only the ground truth keeps; elsewhere the
	// child reports 0 and spends no clock read on it (under gVisor each
	// read of a process clock is a system call).
	Times bool
	// Overrun, where above 1, lets an input's call that struck its limit
	// run on to Overrun times that limit (at most 16): the job is decided
	// where the limit was found struck (a timeout, with the job's CPU time
	// then), and no result of the call counts, but the end says whether
	// the call was still running there (JobEnd.PastRunning,
	// OverrunDecides). 0 or 1: the call stops at its limit. The loading and the list's limit have no overrun.
	Overrun float64
	// EvalPlus makes the job one sample scored by EvalPlus's own code (the
	// supervisor's job kind "evalplus"): Program is the sample, Body the
	// task's line of EvalPlus's dataset file, and Inputs and Limits are
	// empty. Its verdict comes in the end's Result.
	EvalPlus *EvalPlusHeader
	Body     []byte
}

// EvalPlusHeader is what an EvalPlus job's header holds beyond a job's.
type EvalPlusHeader struct {
	Kind         string  `json:"kind"` // "evalplus"
	Dataset      string  `json:"dataset"`
	BaseOnly     bool    `json:"base_only"`
	MinTimeLimit float64 `json:"min_time_limit"`
	Factor       float64 `json:"gt_time_limit_factor"`
	WallLimit    float64 `json:"wall_limit"` // seconds the driver may run
}

type jobHeader struct {
	Job        int       `json:"job"`
	EntryPoint string    `json:"entry_point"`
	ProgramLen int       `json:"program_len"`
	InputsLen  int       `json:"inputs_len"`
	InputLens  []int     `json:"input_lens"`
	Exact      bool      `json:"exact,omitempty"`
	Times      bool      `json:"times,omitempty"`
	Rebuild    string    `json:"rebuild,omitempty"`
	N          int       `json:"n"`
	Limits     []float64 `json:"limits"`
	Expect     []float64 `json:"expect,omitempty"`
	FirstExtra float64   `json:"first_extra"`
	PhaseLimit float64   `json:"phase_limit"`
	ClockScale float64   `json:"clock_scale"`
	WallFactor float64   `json:"wall_factor"`
	RecordCap  int       `json:"record_cap"`
	ByteCap    int64     `json:"byte_cap"`
	Mem        int64     `json:"mem"`
	FSize      int64     `json:"fsize"`
	Overrun    float64   `json:"overrun,omitempty"`
	*EvalPlusHeader
}

// record is one result of a child, as the supervisor forwarded it.
type Record struct {
	Gap     float64 // CPU seconds of the child since the previous record, measured by the supervisor
	WallGap float64 // wall seconds since the previous record
	Kind    byte    // 'V' value, 'X' raised, 'U' unencodable, 'M' program failed
	Time    float64 // the child's own measure of the call's CPU time, on its thread's clock, where Job.Times (not for 'M'), else 0
	Data    []byte  // the encoded value, or a message
}

// EndStatus is how a job ended, as the supervisor reports it (or lost, when
// Go lost the supervisor). Statuses not named here end the job as a
// failure.
type EndStatus string

const (
	EndDone    EndStatus = "done"    // every input ran
	EndTimeout EndStatus = "timeout" // the per-input or phase limit struck
	EndStopped EndStatus = "stopped" // a record failed the job (raised, unencodable)
	EndSetup   EndStatus = "setup"   // the sandbox failed before the program ran
	// EndInexact: a result came within its limit of the previous one but
	// not of its window's release (Job.Exact tells).
	EndInexact EndStatus = "inexact"
	EndLost    EndStatus = "lost" // Go lost the supervisor
)

// JobEnd is the supervisor's account of a job, or Go's when the supervisor
// was lost.
type JobEnd struct {
	Job     int       `json:"job"`
	Status  EndStatus `json:"status"` // done stopped timeout exited toolarge protocol channel cancelled setup zygote hostgone, or lost
	Detail  string    `json:"detail"`
	Records int       `json:"records"`
	// Called: the job's child said the program had run (its code
	// executed, the entry point found) and input 0's call began. The
	// program can send that record itself; it only ever turns a timeout
	// into a fail (codebench's timeoutStatus), so forging it gains
	// nothing.
	Called bool `json:"called"`
	// Elapsed is the job's wall time, on the supervisor's monotonic
	// clock, from the child's start to the job's end.
	Elapsed float64 `json:"elapsed"`
	// CPU is the job's CPU time on the supervisor's job clock from the L
	// frame to the moment the job was decided (its last result, the check
	// that stopped it, or the child's end), loading included; LoadCPU is
	// the part up to the load mark.
	CPU     float64 `json:"cpu"`
	LoadCPU float64 `json:"load_cpu"`
	// HostCPU is the container's CPU time from just before the host sent
	// the job to the E frame as the host read it (cpuClock), the
	// supervisor's own work for the job included, and HostBudget what the
	// host allowed (hostBudget); both 0 where the host has no clock of the
	// container or the job is one of EvalPlus's engine. Set by the host.
	HostCPU    float64 `json:"-"`
	HostBudget float64 `json:"-"`
	// ClockScale is the job header's clock_scale: how many times its
	// value the supervisor applied the load allowance and the list's
	// limit on its job clock (procClockScale under gVisor, whose clock
	// counts a loaded host's waits, where the host's clock holds both;
	// else 1). Set by the host.
	ClockScale float64 `json:"-"`
	// Cancels counts the host's C frames for this job that the supervisor
	// got, during the job or right after it.
	Cancels     int    `json:"cancels"`
	Exit        int    `json:"exit"`
	Stderr      string `json:"stderr"`
	StderrBytes int64  `json:"stderr_bytes"`
	MaxRSSKB    int64  `json:"maxrss_kb"`
	// Last: the supervisor stops after this job (its zygote was lost, a
	// process survived the job, or the job never started).
	Last bool `json:"last"`
	// Retired, when set, says why the supervisor stops after this job
	// although the job itself ended as it may: it left the container's
	// unix sockets or memory charge other than they were before the first
	// job (the supervisor's container_state). The job's verdict stands;
	// the next job gets a fresh container. Last is set with it.
	Retired string `json:"retired,omitempty"`
	// Result is an EvalPlus job's line from its driver, read by the
	// supervisor once every process of the job was gone (untrusted: the
	// sample could write there); Outlived counts the processes of the job
	// still alive when its driver had ended, which the sweep killed.
	Result   string `json:"result"`
	Outlived int    `json:"outlived"`
	// The overrun of a job stopped at an input's limit (Job.Overrun):
	// PastCPU is the CPU time the input's call used in all on the job
	// clock, from the previous record to the overrun's end, PastJobCPU the
	// job's CPU time from the L frame to then (CPU stays the job's time
	// when the limit was found struck), and PastRunning whether the call was still
	// running at Overrun times its limit (else it ended before: a result,
	// an exit, the list's limit). All zero without an overrun.
	PastCPU     float64 `json:"past_cpu"`
	PastJobCPU  float64 `json:"past_job_cpu"`
	PastRunning bool    `json:"past_running"`
}

// OverrunDecides reports whether a timeout's call was still running at the
// end of its overrun (Job.Overrun) by every clock that watched it, from the
// figures a results file keeps of it: running, the supervisor's word
// (JobEnd.PastRunning); jobCPU, the job clock's time from the L frame to
// then (PastJobCPU); hostCPU and hostBudget, the host's reading of the
// container over the job and its budget (0 where the host had no clock of
// it). Where the host read the container, that reading must cover jobCPU:
// under gVisor the job clock counts a loaded host's waits as the
// program's time, so only the host's reading shows that the time past the
// limit was spent computing.
func OverrunDecides(running bool, jobCPU, hostCPU, hostBudget float64) bool {
	return running && (hostBudget == 0 || hostCPU >= jobCPU)
}

// Worker drives one supervisor at a time, starting a fresh one whenever
// the last one was lost, misbehaved or streamed too much. A Worker serves
// one goroutine at a time.
type Worker struct {
	launch   Launcher
	t        Transport
	r        *bufio.Reader
	key      []byte       // the channel key of t
	in       *digest.Hash // HMAC-SHA256 under key, reset for each frame from t
	received uint64       // frames read from t
	hello    Hello
	streamed int64
	started  time.Time
	peak     int64 // highest container peak memory seen
	// grace is added to a job's own limits before Go kills the container.
	grace time.Duration
	// large runs this worker's large jobs (see LargeLimits); nil until
	// the first.
	large *Worker
	// retired counts the supervisors this worker replaced because a job
	// left their container changed (JobEnd.Retired).
	retired int
	// starting is the wall time spent replacing and starting supervisors
	// (see StartWall).
	starting time.Duration
}

// NewWorker returns a worker whose supervisors launch starts; none is
// started before its first job.
func NewWorker(launch Launcher) *Worker { return &Worker{launch: launch} }

// Peak is the highest container peak memory the worker has seen so far
// (its large companion's counted once it is closed).
func (w *Worker) Peak() int64 { return w.peak }

// LargeWorker returns the worker's companion in the large sandbox, or nil
// if launch is nil.
func (w *Worker) LargeWorker(launch Launcher) *Worker {
	if launch == nil {
		return nil
	}
	if w.large == nil {
		w.large = &Worker{launch: launch, grace: w.grace}
	}
	return w.large
}

// RetiredCount is how many containers w and its large companion replaced
// because a job left them changed.
func (w *Worker) RetiredCount() int {
	n := w.retired
	if w.large != nil {
		n += w.large.retired
	}
	return n
}

// StartWall is the wall time w and its large companion have spent
// starting supervisors (ending the one before, launching the container,
// the channel's hello), whether for a first job, a rotation, a retired
// container or a re-run that needs a fresh one.
func (w *Worker) StartWall() time.Duration {
	d := w.starting
	if w.large != nil {
		d += w.large.starting
	}
	return d
}

// RunLarge runs j in the large sandbox, one large job at a time.
func (w *Worker) RunLarge(ctx context.Context, lw *Worker, j *Job, onRecord func(k int, r Record) bool) (JobEnd, error) {
	select {
	case largeSlot <- struct{}{}:
	case <-ctx.Done():
		return JobEnd{}, ctx.Err()
	}
	defer func() { <-largeSlot }()
	end, err := lw.Run(ctx, j, onRecord)
	// The large container is not kept: its memory goes back at once.
	lw.End(false)
	return end, err
}

// rotateAfter is how much a supervisor may stream before it is replaced;
// the sandbox keeps at most OutputCap bytes of a program's stdout.
const rotateAfter = 160 << 20

// rotateAge is how long a supervisor serves before it is replaced, well
// within its container's deadline.
const rotateAge = 45 * time.Minute

// heartbeatCPU is the container CPU time after which a silent supervisor
// is taken for stopped or wedged (how long it may stay silent, and how
// long one whose container got less is waited for, are heartbeatTimeout
// and heartbeatWallMax in controls.go).
const heartbeatCPU = 2 * time.Second

// helloTimeout bounds the start of a supervisor.
const helloTimeout = 60 * time.Second

// maxControlFrame bounds the H, E and F frames.
const maxControlFrame = 1 << 20

func (w *Worker) ensure(ctx context.Context) error {
	if w.t != nil && w.streamed < rotateAfter && time.Since(w.started) < rotateAge {
		return nil
	}
	from := time.Now()
	defer func() { w.starting += time.Since(from) }()
	w.End(false)
	t, err := w.launch(ctx)
	if err != nil {
		return err
	}
	w.t, w.r, w.streamed, w.started = t, bufio.NewReaderSize(t, 1<<16), 0, time.Now()
	w.key, w.received = make([]byte, channelKeySize), 0
	rand.Read(w.key)
	w.in = digest.NewHMAC(w.key)
	hello := time.AfterFunc(helloTimeout, t.Abort)
	// A stop while the supervisor starts discards it at once too.
	stopHello := context.AfterFunc(ctx, t.Discard)
	_, err = t.Write(append([]byte{'K', 0, 0, 0, channelKeySize}, w.key...))
	var (
		kind byte
		body []byte
	)
	if err == nil {
		kind, body, err = w.frame(maxControlFrame)
	}
	hello.Stop()
	if !stopHello() {
		err = ctx.Err() // discarded (stop below waits for it)
	}
	if err == nil && kind == 'F' {
		err = fmt.Errorf("it stopped: %s", task.Clip(string(body)))
	} else if err == nil && kind != 'H' {
		err = fmt.Errorf("first frame is %q, not hello", kind)
	}
	if err == nil {
		err = strictjson.DecodeOpen(body, &w.hello)
	}
	if err == nil && w.hello.Protocol != protocolVersion {
		err = fmt.Errorf("protocol %d, want %d", w.hello.Protocol, protocolVersion)
	}
	if err != nil {
		w.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if stderr := task.Clip(t.Stderr()); stderr != "" {
			return fmt.Errorf("the supervisor did not start: %v: %s", err, stderr)
		}
		return fmt.Errorf("the supervisor did not start: %v", err)
	}
	return nil
}

// stop kills the current supervisor, if any.
func (w *Worker) stop() { w.End(true) }

// Discard ends the worker's supervisor and its large companion's at once,
// without their outcome: for a run that was stopped (Ctrl-C), which must
// not wait for what a graceful end collects. It returns once their
// containers are removed; the companion's peak memory counts in Peak, as
// after Close.
func (w *Worker) Discard() {
	if w.t != nil {
		w.t.Discard()
		w.forget()
	}
	if w.large != nil {
		w.large.Discard()
		w.peak = max(w.peak, w.large.peak)
	}
}

// End ends the current supervisor: killed at once if abort is set, else by
// closing its stdin, which it reads as the end of the run.
func (w *Worker) End(abort bool) {
	if w.t == nil {
		return
	}
	if abort {
		w.t.Abort()
	}
	if peak, err := w.t.Close(); err == nil && peak > w.peak {
		w.peak = peak
	}
	w.forget()
}

// forget drops the current supervisor: its transport, reader and channel
// key. The next job starts a fresh one (ensure).
func (w *Worker) forget() { w.t, w.r, w.key, w.in = nil, nil, nil, nil }

// frame reads one frame of at most max bytes and checks its tag: it must
// be the supervisor's next frame.
func (w *Worker) frame(max int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(w.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if int64(n) > int64(max) {
		return 0, nil, fmt.Errorf("frame %q of %d bytes is over the limit of %d", hdr[0], n, max)
	}
	body := make([]byte, int(n)+tagSize)
	if _, err := io.ReadFull(w.r, body); err != nil {
		return 0, nil, err
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], w.received)
	w.in.Reset()
	w.in.Write(supervisorDomain)
	w.in.Write(seq[:])
	w.in.Write(hdr[:])
	w.in.Write(body[:n])
	if sum := w.in.Digest(); !hmac.Equal(sum[:], body[n:]) {
		if w.received == 0 && hdr[0] == 'F' {
			// Before its hello no job exists: this is the supervisor
			// failing before it had the key.
			return 0, nil, fmt.Errorf("the supervisor stopped before it had the channel key: %s", task.Clip(string(body[:n])))
		}
		return 0, nil, fmt.Errorf("frame %d (%q, %d bytes) is not the supervisor's: its tag does not match (another process wrote into or read from the channel)", w.received, hdr[0], n)
	}
	w.received++
	w.streamed += int64(5 + n + tagSize)
	return hdr[0], body[:n], nil
}

// hostFrame is a frame for the supervisor: kind, the length of head, head,
// the rest (a job's program and inputs), and the tag over all of it.
func (w *Worker) hostFrame(kind byte, head []byte, rest ...[]byte) []byte {
	size := 5 + len(head) + tagSize
	for _, r := range rest {
		size += len(r)
	}
	msg := make([]byte, 0, size)
	msg = append(msg, kind)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(head)))
	msg = append(msg, head...)
	for _, r := range rest {
		msg = append(msg, r...)
	}
	mac := digest.NewHMAC(w.key)
	mac.Write(hostDomain)
	mac.Write(msg)
	return mac.Sum(msg)
}

// barrier makes sure nothing is left of a C frame in the supervisor's
// stdin: it sends a barrier and waits for its answer, and stops the
// supervisor if that does not come back whole.
func (w *Worker) barrier() {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	t := w.t
	timer := time.AfterFunc(heartbeatTimeout.Load(), t.Abort)
	defer timer.Stop()
	if _, err := t.Write(w.hostFrame('S', nonce)); err != nil {
		w.stop()
		return
	}
	kind, body, err := w.frame(maxControlFrame)
	if err != nil || kind != 'S' || !bytes.Equal(body, nonce) {
		w.stop()
	}
}

// Run sends j and hands each record to onRecord, which returns false to stop
// the job early. It returns the job's end. A supervisor that dies, breaks the
// protocol or overruns the job's limits is killed and reported as status
// "lost" with the records seen; the next job gets a fresh supervisor. Once
// ctx is done (the run was stopped, or a pool cancelled its other jobs on
// a failure) the supervisor is discarded at once, whatever the job is
// doing, and Run returns ctx's error and no end, even one that came
// meanwhile: a stopped run decides nothing more. Run returns only once the
// discarded container is removed.
func (w *Worker) Run(ctx context.Context, j *Job, onRecord func(k int, r Record) bool) (end JobEnd, err error) {
	if err := ctx.Err(); err != nil {
		return JobEnd{}, err
	}
	if err := w.ensure(ctx); err != nil {
		return JobEnd{}, err
	}
	discarded := make(chan struct{})
	tr := w.t
	stopWatch := context.AfterFunc(ctx, func() { tr.Discard(); close(discarded) })
	defer func() {
		stopped := stopWatch()
		if stopped && ctx.Err() == nil {
			return // never stopped: the job's end stands
		}
		if stopped {
			tr.Discard() // ctx is done, and its AfterFunc was not yet started
		} else {
			<-discarded
		}
		if w.t == tr {
			w.forget()
		}
		end, err = JobEnd{}, ctx.Err()
	}()
	inputs, lens := joinInputs(j.Inputs)
	if j.EvalPlus != nil {
		inputs, lens = j.Body, nil
	}
	t := w.t
	clk, _ := t.(cpuClock)
	if !HostClockOn {
		clk = nil
	}
	scale := clockScale(w.hello.Clock, clk != nil)
	hdr, err := json.Marshal(jobHeader{EvalPlusHeader: j.EvalPlus, ClockScale: scale,
		Job: j.ID, EntryPoint: j.EntryPoint, ProgramLen: len(j.Program), InputsLen: len(inputs), InputLens: lens, Exact: j.Exact, Times: j.Times,
		Rebuild: j.Rebuild, N: len(j.Limits), Limits: j.Limits, Expect: j.Expect, FirstExtra: j.FirstExtra, PhaseLimit: j.PhaseLimit,
		WallFactor: j.WallFactor, RecordCap: j.RecordCap, ByteCap: j.ByteCap, Mem: j.Memory, FSize: j.FSize,
		Overrun: j.Overrun,
	})
	if err != nil {
		return JobEnd{}, err
	}
	if len(hdr) > maxJobHeader {
		return JobEnd{}, fmt.Errorf("job %d: its header for %d inputs is %d bytes, over the %d the supervisor takes: the input list is too long for one job", j.ID, len(j.Limits), len(hdr), maxJobHeader)
	}
	// The watchdog kills the container if the supervisor does not end the
	// job in a wall time far beyond its CPU limits: a wedged supervisor
	// cannot hold a run. (A stopped one is caught sooner by its missing
	// heartbeat.)
	limit := time.Duration(max(600, 20*(j.PhaseLimit+j.FirstExtra))*float64(time.Second)) + w.grace
	var (
		mu       sync.Mutex
		expired  bool
		finished bool
	)
	timer := time.AfterFunc(limit, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			expired = true
			t.Abort()
		}
	})
	// A supervisor that sends nothing, not even a heartbeat, for
	// heartbeatTimeout is stopped, wedged or starved. With the host's clock
	// the three are told apart by the container's CPU time: a supervisor
	// that runs sends a frame each second, at a priority above the job's,
	// so one silent while its container used heartbeatCPU is stopped or
	// wedged and is killed; one whose container got less was starved by a
	// loaded host and is waited for, up to heartbeatWallMax. (A job gains
	// nothing by stopping the supervisor: its job ends as lost.)
	silence, starved := heartbeatTimeout.Load(), heartbeatWallMax.Load()
	lastFrame := time.Now()
	var lastCPU time.Duration
	if clk != nil {
		lastCPU, _ = clk.CPUUsage()
	}
	var alive *time.Timer
	alive = time.AfterFunc(silence, func() {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		if clk != nil && time.Since(lastFrame) < starved {
			if u, err := clk.CPUUsage(); err == nil && u-lastCPU < heartbeatCPU {
				alive.Reset(silence / 4)
				return
			}
		}
		expired = true
		t.Abort()
	})
	defer func() {
		mu.Lock()
		finished = true
		mu.Unlock()
		timer.Stop()
		alive.Stop()
	}()

	// The host's clock of the job: the container's CPU usage, read fresh
	// just before the job is sent and when its E frame comes, and at most
	// once per clockRefresh at the frames between. The container is idle
	// before the J frame (the supervisor has sent the last job's E frame
	// and waits), and every process of the job is gone before the E frame,
	// so the job's whole CPU time lies between the two readings however
	// late the host reads the frames: a host not scheduled while a short
	// job ran gets its L to E frames at once, and a clock started at the L
	// frame would see none of the job. A job that uses more than
	// hostBudget by it is stopped, whatever the supervisor's own clock saw
	// (under gVisor that clock sums /proc, which misses a process nobody
	// waits for). The loading, up to the G frame (the load mark), is held
	// to hostLoadBudget the same way.
	// (A job of EvalPlus's engine runs under its driver's own wall limit,
	// without the supervisor's per-input limits the budget is made of: the
	// host's clock tells only whether its supervisor is starved, above.)
	held := clk != nil && j.EvalPlus == nil
	fc := frameClock{clk: clk}
	var cpuStart, cpuUsed time.Duration
	if held {
		if cpuStart, err = fc.read(time.Now(), true); err != nil {
			// Nothing of the job ran: a setup failure, which the scorer
			// tries once more in a fresh container.
			w.stop()
			return JobEnd{Job: j.ID, Status: EndSetup, Detail: fmt.Sprintf("cannot read the container's CPU usage before sending the job: %v", err), Last: true}, nil
		}
	}
	msg := w.hostFrame('J', hdr, j.Program, inputs)
	sendErr := make(chan error, 1)
	go func() { _, err := t.Write(msg); sendErr <- err }()
	sent := false
	waitSent := func() error {
		if sent {
			return nil
		}
		sent = true
		return <-sendErr
	}

	lost := func(k int, why string) (JobEnd, error) {
		if ctx.Err() != nil {
			// The stream ended because the run was stopped: the deferred
			// call discards.
			return JobEnd{}, ctx.Err()
		}
		mu.Lock()
		if expired {
			why = "the supervisor did not finish the job in time"
		}
		mu.Unlock()
		w.stop()
		return JobEnd{Job: j.ID, Status: EndLost, Detail: why, Records: k}, nil
	}
	k := 0
	cancelled := false
	maxRecord := j.RecordCap + 16
	loaded, marked := false, false
	budget, loadBudget := hostBudget(j), hostLoadBudget(j)
	overBudget := func() string {
		return fmt.Sprintf("the job used %.2f s of CPU time as the host measures its container, over the %.2f s its limits allow",
			cpuUsed.Seconds(), budget.Seconds())
	}
	overLoad := func() string {
		return fmt.Sprintf("loading the program used %.2f s of CPU time as the host measures its container, over the %.2f s its load allowance allows",
			cpuUsed.Seconds(), loadBudget.Seconds())
	}
	loadOver := func() bool { return !marked && loadBudget > 0 && cpuUsed > loadBudget }
	for {
		mu.Lock()
		lastFrame = time.Now()
		if clk != nil {
			if u, err := fc.read(lastFrame, false); err == nil {
				lastCPU = u
			}
		}
		mu.Unlock()
		if ctx.Err() != nil {
			return JobEnd{}, ctx.Err() // the deferred call discards
		}
		alive.Reset(silence)
		kind, body, err := w.frame(max(maxRecord, maxControlFrame))
		if err != nil {
			return lost(k, fmt.Sprintf("the supervisor's stream ended: %v", err))
		}
		if held {
			u, err := fc.read(time.Now(), kind == 'E')
			if err != nil {
				return lost(k, fmt.Sprintf("cannot read the container's CPU usage: %v", err))
			}
			if cpuUsed = u - cpuStart; cpuUsed > budget && kind != 'E' {
				w.stop()
				return JobEnd{Job: j.ID, Status: EndTimeout, Detail: overBudget(), Records: k, Last: true,
					HostCPU: cpuUsed.Seconds(), HostBudget: budget.Seconds()}, nil
			}
			if loadOver() && kind != 'E' {
				w.stop()
				return JobEnd{Job: j.ID, Status: EndTimeout, Detail: overLoad(), Records: k, Last: true,
					HostCPU: cpuUsed.Seconds(), HostBudget: budget.Seconds()}, nil
			}
		}
		switch kind {
		case 'L':
			if loaded || len(body) != 0 {
				return lost(k, "a second or malformed L frame")
			}
			loaded = true
		case 'G':
			if !loaded || marked || len(body) != 0 {
				return lost(k, "a G frame before the L frame, a second or a malformed one")
			}
			marked = true
		case 'R':
			if !loaded {
				return lost(k, "a record before the L frame")
			}
			if len(body) < 17 {
				return lost(k, "short record frame")
			}
			rec := Record{
				Gap:     math.Float64frombits(binary.BigEndian.Uint64(body)),
				WallGap: math.Float64frombits(binary.BigEndian.Uint64(body[8:])),
				Kind:    body[16],
			}
			data := body[17:]
			switch rec.Kind {
			case 'V', 'X', 'U':
				if len(data) < 8 {
					return lost(k, "short record")
				}
				rec.Time = math.Float64frombits(binary.BigEndian.Uint64(data))
				rec.Data = data[8:]
			case 'M':
				rec.Data = data
			default:
				return lost(k, fmt.Sprintf("record of kind %q", rec.Kind))
			}
			if k >= len(j.Limits) && !(k == 0 && rec.Kind == 'M') {
				// (A job without inputs still loads the program, which
				// may fail: M.)
				return lost(k, "more records than inputs")
			}
			if !cancelled && !onRecord(k, rec) {
				cancelled = true
				if err := waitSent(); err != nil {
					return lost(k+1, fmt.Sprintf("cannot send the job: %v", err))
				}
				if _, err := t.Write(w.hostFrame('C', binary.BigEndian.AppendUint32(nil, uint32(j.ID)))); err != nil {
					return lost(k+1, "cannot stop the job")
				}
			}
			k++
		case 'E':
			if err := waitSent(); err != nil {
				return lost(k, fmt.Sprintf("cannot send the job: %v", err))
			}
			var end JobEnd
			if err := strictjson.DecodeOpen(body, &end); err != nil || end.Job != j.ID || end.Records != k {
				return lost(k, "malformed end of job")
			}
			if held {
				end.HostCPU, end.HostBudget = cpuUsed.Seconds(), budget.Seconds()
			}
			if j.EvalPlus == nil {
				end.ClockScale = scale
			}
			if held && cpuUsed > budget && (end.Status == EndDone || end.Status == EndStopped) {
				// Every record came within the supervisor's clock, but not
				// within the host's: the job hid CPU time.
				end.Status, end.Detail = EndTimeout, overBudget()
			} else if held && loadOver() && (end.Status == EndDone || end.Status == EndStopped) {
				// The program ended (or failed) while loading, past its
				// allowance by the host's clock.
				end.Status, end.Detail = EndTimeout, overLoad()
			}
			if end.Retired != "" {
				w.retired++
			}
			if end.Status == EndSetup || end.Last || end.Retired != "" {
				// The supervisor stops after this job: the next one gets a
				// fresh container.
				w.stop()
			} else if cancelled && end.Cancels == 0 {
				// The C frame is still on its way, or a process of the job
				// took some of it: a barrier shows which, before the next
				// job is sent.
				w.barrier()
			}
			return end, nil
		case 'P':
		case 'F':
			return lost(k, "the supervisor stopped: "+task.Clip(string(body)))
		default:
			return lost(k, fmt.Sprintf("frame of kind %q", kind))
		}
	}
}

// joinInputs builds the JSON array of argument lists the supervisor gets,
// and the length of each, by which it cuts the array into windows.
func joinInputs(in []json.RawMessage) ([]byte, []int) {
	n := 2
	lens := make([]int, len(in))
	for i, m := range in {
		n += len(m) + 1
		lens[i] = len(m)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, m := range in {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']'), lens
}

// Release ends the worker as a pool's worker ends: Close, or Discard once
// ctx is done (the run was stopped). It returns the peak memory.
func (w *Worker) Release(ctx context.Context) int64 {
	if ctx.Err() != nil {
		w.Discard()
		return w.peak
	}
	return w.Close()
}

// Close ends the worker's supervisor and returns the highest container peak
// memory seen.
func (w *Worker) Close() int64 {
	w.End(false)
	if w.large != nil {
		w.peak = max(w.peak, w.large.Close())
	}
	return w.peak
}

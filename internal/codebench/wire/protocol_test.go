package wire

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
)

// supervisorStream stands in for a supervisor when the stream itself is
// under test (the frame parser, the channel's tags): it takes the channel
// key from the worker's first frame and then replays the frames it was
// given, each with the tag a supervisor would give it; a frame cut short
// at the end goes out as it is. It answers a barrier as a supervisor does,
// unless lie is set, and keeps what the worker wrote.
type supervisorStream struct {
	frames  []byte // kind, u32 length, body; repeated
	key     []byte
	out     bytes.Buffer
	sent    uint64 // frames tagged so far
	written [][]byte
	lie     bool
}

func (s *supervisorStream) Write(p []byte) (int, error) {
	s.written = append(s.written, bytes.Clone(p))
	if s.key == nil {
		if len(p) == 5+channelKeySize && p[0] == 'K' {
			s.key = bytes.Clone(p[5:])
			s.tagAll(s.frames)
		}
		return len(p), nil
	}
	if p[0] == 'S' && len(p) == 5+8+tagSize {
		nonce := bytes.Clone(p[5:13])
		if s.lie {
			nonce[0] ^= 1
		}
		s.tagAll(frameOf('S', nonce))
	}
	return len(p), nil
}

// tagAll appends raw's frames to what the stream replays, tagged.
func (s *supervisorStream) tagAll(raw []byte) {
	for len(raw) >= 5 {
		n := int(binary.BigEndian.Uint32(raw[1:]))
		if len(raw) < 5+n {
			break
		}
		s.out.Write(tagged(s.key, s.sent, raw[:5+n]))
		s.sent++
		raw = raw[5+n:]
	}
	s.out.Write(raw)
}

// tagged is frame with the tag of the supervisor's frame number seq.
func tagged(key []byte, seq uint64, frame []byte) []byte {
	mac := digest.NewHMAC(key)
	mac.Write(supervisorDomain)
	mac.Write(binary.BigEndian.AppendUint64(nil, seq))
	mac.Write(frame)
	return mac.Sum(bytes.Clone(frame))
}

func (s *supervisorStream) Read(p []byte) (int, error) { return s.out.Read(p) }
func (s *supervisorStream) Abort()                     {}
func (s *supervisorStream) Discard()                   {}
func (s *supervisorStream) Close() (int64, error)      { return 0, nil }
func (s *supervisorStream) Stderr() string             { return "" }
func streamOf(b []byte) Launcher                       { return launcherOf(&supervisorStream{frames: b}) }
func launcherOf(t Transport) Launcher {
	return func(context.Context) (Transport, error) { return t, nil }
}
func frameOf(kind byte, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{kind}, uint32(len(body))), body...)
}
func hello() []byte {
	return frameOf('H', []byte(fmt.Sprintf(`{"protocol":%d,"python":"3.11"}`, protocolVersion)))
}

// twoResultJob is the frames of testJob(2) done: L, two results, E.
func twoResultJob() []byte {
	job := append(frameOf('L', nil), recordFrame('V', intv(1))...)
	job = append(job, recordFrame('V', intv(2))...)
	return append(job, endFrame(7, 2, "done")...)
}

// helloLoaded is the hello and the L frame of the job after it.
func helloLoaded() []byte { return append(hello(), frameOf('L', nil)...) }
func recordFrame(kind byte, value []byte) []byte {
	return frameOf('R', append(append(make([]byte, 16), kind), append(make([]byte, 8), value...)...))
}
func endFrame(job, records int, status EndStatus) []byte {
	return endFrameOf(JobEnd{Job: job, Status: status, Records: records})
}
func endFrameOf(end JobEnd) []byte {
	b, _ := json.Marshal(end)
	return frameOf('E', b)
}

func testJob(n int) *Job {
	limits := make([]float64, n)
	for i := range limits {
		limits[i] = 1
	}
	return &Job{ID: 7, EntryPoint: "f", Program: []byte("x"), Limits: limits,
		FirstExtra: 1, PhaseLimit: 10, WallFactor: 3, RecordCap: 1 << 20, ByteCap: 1 << 22, Memory: 1 << 28, FSize: 1}
}

func TestWorkerReadsAJob(t *testing.T) {
	stream := append(helloLoaded(), recordFrame('V', intv(1))...)
	stream = append(stream, frameOf('P', nil)...)
	stream = append(stream, recordFrame('V', intv(2))...)
	stream = append(stream, endFrame(7, 2, "done")...)
	w := &Worker{launch: streamOf(stream)}
	var got []string
	end, err := w.Run(context.Background(), testJob(2), func(k int, r Record) bool {
		got = append(got, string(r.Data))
		return true
	})
	if err != nil || end.Status != "done" || len(got) != 2 || got[1] != string(intv(2)) {
		t.Fatalf("end %+v, err %v, records %v", end, err, got)
	}
}

// stalledStream is a supervisor in the middle of a long job: once its
// frames are read it sends nothing more until it is discarded.
type stalledStream struct {
	supervisorStream
	discarded chan struct{}
	discards  int
}

func (s *stalledStream) Read(p []byte) (int, error) {
	if s.out.Len() > 0 {
		return s.out.Read(p)
	}
	<-s.discarded
	return 0, io.ErrClosedPipe
}

func (s *stalledStream) Discard() {
	s.discards++
	close(s.discarded)
}

// A stopped run (Ctrl-C) discards the supervisor of the job in flight at
// once and decides nothing: Run returns the context's error, not an end.
func TestWorkerDiscardsTheJobInFlightWhenStopped(t *testing.T) {
	s := &stalledStream{supervisorStream: supervisorStream{frames: append(helloLoaded(), recordFrame('V', intv(1))...)}, discarded: make(chan struct{})}
	w := &Worker{launch: launcherOf(s)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	records := 0
	end, err := w.Run(ctx, testJob(2), func(k int, r Record) bool {
		records++
		time.AfterFunc(20*time.Millisecond, cancel) // while Run waits for the next frame
		return true
	})
	if !errors.Is(err, context.Canceled) || end.Status != "" || records != 1 {
		t.Fatalf("end %+v, err %v after %d records: want the context's error and no end", end, err, records)
	}
	if s.discards != 1 || w.t != nil {
		t.Errorf("discarded %d times, worker's transport %v: want it discarded once and let go", s.discards, w.t)
	}
	w.Discard() // nothing left to discard
	if s.discards != 1 {
		t.Errorf("discarded %d times", s.discards)
	}
}

// A stop while the supervisor starts (before its hello) discards it too.
func TestWorkerDiscardsAStartingSupervisorWhenStopped(t *testing.T) {
	s := &stalledStream{discarded: make(chan struct{})}
	w := &Worker{launch: launcherOf(s)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(20*time.Millisecond, cancel)
	end, err := w.Run(ctx, testJob(2), func(int, Record) bool { return true })
	if !errors.Is(err, context.Canceled) || end.Status != "" || s.discards != 1 || w.t != nil {
		t.Fatalf("end %+v, err %v, discarded %d times, transport %v: want the context's error, the supervisor discarded once", end, err, s.discards, w.t)
	}
	if _, err := w.Run(ctx, testJob(2), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a run on a stopped context: %v, want the context's error before any start", err)
	}
}

func TestWorkerLosesABrokenSupervisor(t *testing.T) {
	for name, tail := range map[string][]byte{
		"truncated record":     recordFrame('V', intv(1))[:10],
		"unknown frame":        frameOf('Q', nil),
		"oversized frame":      {'R', 0xff, 0xff, 0xff, 0xff},
		"end for another job":  endFrame(8, 0, "done"),
		"end with wrong count": endFrame(7, 5, "done"),
		"too many records":     append(recordFrame('V', intv(1)), recordFrame('V', intv(1))...),
		"fatal":                frameOf('F', []byte("boom")),
		"record of bad kind":   recordFrame('Z', intv(1)),
	} {
		w := &Worker{launch: streamOf(append(helloLoaded(), tail...))}
		end, err := w.Run(context.Background(), testJob(1), func(int, Record) bool { return true })
		if err != nil || end.Status != "lost" {
			t.Errorf("%s: end %+v, err %v; want the supervisor lost", name, end, err)
		}
		if w.t != nil {
			t.Errorf("%s: the lost supervisor was kept", name)
		}
	}
}

func FuzzSupervisorStream(f *testing.F) {
	f.Add(append(append(helloLoaded(), recordFrame('V', floatv(math.Pi))...), endFrame(7, 1, "done")...))
	f.Add(append(append(helloLoaded(), recordFrame('X', []byte("ValueError: x"))...), endFrame(7, 1, "stopped")...))
	f.Add(append(hello(), frameOf('M', []byte("SyntaxError"))...))
	f.Add(hello())
	f.Add([]byte{})
	exp, err := judge.ParseValue(floatv(math.Pi), judge.DefaultBounds)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		w := &Worker{launch: streamOf(stream)}
		o := testOracle(task.HumanEvalPlus, 0, "f")
		w.Run(context.Background(), testJob(3), func(k int, r Record) bool {
			if r.Kind != 'V' {
				return false
			}
			v, err := judge.ParseValue(r.Data, judge.DefaultBounds)
			if err != nil {
				return false
			}
			ok, _ := o.Check([]byte("[1]"), v, exp)
			return ok
		})
	})
}

// TestChannelKeyComesFirst: the worker's first bytes to a supervisor are a
// fresh key; its job and cancel frames carry the host's tag under it.
func TestChannelKeyComesFirst(t *testing.T) {
	var keys [][]byte
	for range 2 {
		stream := append(helloLoaded(), recordFrame('V', intv(1))...)
		stream = append(stream, endFrameOf(JobEnd{Job: 7, Status: "stopped", Records: 1, Cancels: 1})...)
		s := &supervisorStream{frames: stream}
		w := &Worker{launch: launcherOf(s)}
		end, err := w.Run(context.Background(), testJob(2), func(int, Record) bool { return false })
		if err != nil || end.Status != "stopped" {
			t.Fatalf("end %+v, err %v", end, err)
		}
		if len(s.written) != 3 {
			t.Fatalf("the worker wrote %d times, want key, job, cancel", len(s.written))
		}
		key := s.written[0][5:]
		if len(key) != channelKeySize || bytes.Equal(key, make([]byte, channelKeySize)) {
			t.Fatalf("first write %x is not a key", s.written[0])
		}
		keys = append(keys, key)
		for _, f := range s.written[1:] {
			body, tag := f[:len(f)-tagSize], f[len(f)-tagSize:]
			mac := digest.NewHMAC(key)
			mac.Write(hostDomain)
			mac.Write(body)
			if !hmac.Equal(mac.Sum(nil), tag) {
				t.Errorf("frame %q does not carry the host's tag", f[0])
			}
		}
		if c := s.written[2]; c[0] != 'C' || binary.BigEndian.Uint32(c[5:]) != 7 {
			t.Errorf("cancel frame %x does not name job 7", c)
		}
	}
	if bytes.Equal(keys[0], keys[1]) {
		t.Error("two supervisors got the same key")
	}
}

// TestWorkerRefusesFramesNotTagged: a frame that is not the supervisor's
// next (forged, replayed, dropped, reordered, under another key) ends the
// job as lost and the supervisor with it.
func TestWorkerRefusesFramesNotTagged(t *testing.T) {
	rec1, rec2 := recordFrame('V', intv(1)), recordFrame('V', intv(2))
	end := endFrame(7, 2, "done")
	other := make([]byte, channelKeySize)
	for name, edit := range map[string]func(s *supervisorStream){
		"forged record": func(s *supervisorStream) {
			s.out.Write(append(rec1, make([]byte, tagSize)...))
		},
		"untagged record": func(s *supervisorStream) { s.out.Write(rec1) },
		"replayed record": func(s *supervisorStream) {
			s.tagAll(rec1)
			s.out.Write(tagged(s.key, s.sent-1, rec1))
		},
		"dropped frame": func(s *supervisorStream) {
			s.sent++
			s.tagAll(append(append(rec1, rec2...), end...))
		},
		"reordered frames": func(s *supervisorStream) {
			s.out.Write(tagged(s.key, s.sent+1, rec1))
			s.out.Write(tagged(s.key, s.sent, rec2))
			s.sent += 2
			s.tagAll(end)
		},
		"another key": func(s *supervisorStream) {
			s.out.Write(tagged(other, s.sent, rec1))
		},
		"a byte taken": func(s *supervisorStream) {
			f := tagged(s.key, s.sent, rec1)
			s.out.Write(f[1:])
		},
	} {
		s := &supervisorStream{frames: helloLoaded()}
		w := &Worker{launch: launcherOf(s)}
		if err := w.ensure(context.Background()); err != nil {
			t.Fatal(err)
		}
		edit(s)
		s.tagAll(append(append(rec1, rec2...), end...))
		got, err := w.Run(context.Background(), testJob(2), func(int, Record) bool { return true })
		if err != nil || got.Status != EndLost || !strings.Contains(got.Detail, "is not the supervisor's") && !strings.Contains(got.Detail, "stream ended") {
			t.Errorf("%s: end %+v, err %v; want the supervisor lost", name, got, err)
		}
		if w.t != nil {
			t.Errorf("%s: the supervisor was kept", name)
		}
	}
}

// TestBarrierAfterALateCancel: when the supervisor ended a job before the
// host's cancel reached it, the worker keeps that supervisor only once a
// barrier came back whole.
func TestBarrierAfterALateCancel(t *testing.T) {
	for _, lie := range []bool{false, true} {
		stream := append(helloLoaded(), recordFrame('V', intv(1))...)
		stream = append(stream, endFrame(7, 1, "done")...)
		s := &supervisorStream{frames: stream, lie: lie}
		w := &Worker{launch: launcherOf(s)}
		end, err := w.Run(context.Background(), testJob(1), func(int, Record) bool { return false })
		if err != nil || end.Status != EndDone {
			t.Fatalf("end %+v, err %v", end, err)
		}
		last := s.written[len(s.written)-1]
		if last[0] != 'S' {
			t.Fatalf("no barrier after the late cancel: last frame %q", last[0])
		}
		if kept := w.t != nil; kept == lie {
			t.Errorf("barrier answered wrongly %v: supervisor kept %v", lie, kept)
		}
	}
}

// TestSupervisorFailingBeforeItsHello: a supervisor that stops after it
// has the key but before its hello (its zygote, its clock, the container's
// state) sends a tagged fatal frame; the worker's error carries its text.
func TestSupervisorFailingBeforeItsHello(t *testing.T) {
	s := &supervisorStream{frames: frameOf('F', []byte("the container's unix sockets or memory charge are unreadable"))}
	w := &Worker{launch: launcherOf(s)}
	err := w.ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the supervisor did not start: it stopped: the container's unix sockets or memory charge are unreadable") {
		t.Fatalf("ensure: %v", err)
	}
}

// TestSupervisorFailingBeforeTheKey: a supervisor that stops before it has
// the key sends its fatal frame with a tag of zeros; the worker reports its
// text, and a zero-tagged frame is refused anywhere else.
func TestSupervisorFailingBeforeTheKey(t *testing.T) {
	untagged := append(frameOf('F', []byte("cannot make the supervisor non-dumpable")), make([]byte, tagSize)...)
	s := &supervisorStream{}
	s.out.Write(untagged)
	w := &Worker{launch: launcherOf(s)}
	err := w.ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "before it had the channel key: cannot make the supervisor non-dumpable") {
		t.Fatalf("ensure: %v", err)
	}
	s = &supervisorStream{frames: hello()}
	w = &Worker{launch: launcherOf(s)}
	if err := w.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.out.Write(untagged)
	end, err := w.Run(context.Background(), testJob(1), func(int, Record) bool { return true })
	if err != nil || end.Status != EndLost || strings.Contains(end.Detail, "non-dumpable") {
		t.Errorf("a zero-tagged fatal frame after the hello: end %+v, err %v", end, err)
	}
}

// clockedStream is a supervisorStream whose container's CPU usage, as the
// host reads it, grows by step at each read.
type clockedStream struct {
	supervisorStream
	now, step time.Duration
}

func (c *clockedStream) CPUUsage() (time.Duration, error) {
	c.now += c.step
	return c.now, nil
}

// TestHostClockHoldsTheJob: a job whose every record came within the
// supervisor's clock but whose container used more CPU than its limits
// allow, by the host's reading, is a timeout; a supervisor that sends a
// record before the L frame (the host's clock never started) is lost.
func TestHostClockHoldsTheJob(t *testing.T) {
	// The fake clock grows by step at each read, not with wall time: each
	// frame reads it.
	defer func(r time.Duration) { clockRefresh = r }(clockRefresh)
	clockRefresh = 0
	j := testJob(2) // 1 s load allowance, 1 s per input: 3 s, 3.8 s with the slack
	if b := hostBudget(j); b != 3800*time.Millisecond {
		t.Fatalf("budget %v", b)
	}
	run := func(step time.Duration, frames []byte) JobEnd {
		t.Helper()
		s := &clockedStream{supervisorStream: supervisorStream{frames: append(hello(), frames...)}, step: step}
		w := &Worker{launch: launcherOf(s)}
		end, err := w.Run(context.Background(), testJob(2), func(int, Record) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	job := twoResultJob()
	if end := run(10*time.Millisecond, job); end.Status != EndDone {
		t.Errorf("within the budget: %+v", end)
	}
	// Each read finds 1 s more: by the end the job has used about 6 s.
	if end := run(time.Second, job); end.Status != EndTimeout || !strings.Contains(end.Detail, "as the host measures") {
		t.Errorf("over the budget: %+v", end)
	}
	noL := append(recordFrame('V', intv(1)), recordFrame('V', intv(2))...)
	if end := run(time.Millisecond, append(noL, endFrame(7, 2, "done")...)); end.Status != EndLost {
		t.Errorf("records before L: %+v", end)
	}
}

// lateStream is a supervisor whose job runs whole before the host reads
// any frame of it, as on a loaded host that was not scheduled while a short
// job ran: when the host writes the J frame the container's CPU usage grows
// by jobCPU, and only then do the job's frames (L to E) become readable,
// all at once.
type lateStream struct {
	supervisorStream
	job    []byte
	jobCPU time.Duration
	mu     sync.Mutex
	ran    chan struct{}
	usage  time.Duration
}

func (s *lateStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keyed := s.key != nil
	n, err := s.supervisorStream.Write(p)
	if keyed && p[0] == 'J' {
		s.usage += s.jobCPU
		s.tagAll(s.job)
		close(s.ran)
	}
	return n, err
}

func (s *lateStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	empty := s.out.Len() == 0 && s.key != nil
	s.mu.Unlock()
	if empty {
		<-s.ran
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Read(p)
}

func (s *lateStream) CPUUsage() (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage, nil
}

// TestHostClockCoversALateReadJob: the host's clock of a job spans its
// whole run however late the host reads its frames. A job whose L to E
// frames all reach the host after it has ended is charged every CPU-second
// it used: an honest one its own (not 0), one over its limits is stopped.
// A clock started at the host's reading of the L frame saw none of either.
func TestHostClockCoversALateReadJob(t *testing.T) {
	job := twoResultJob()
	for _, c := range []struct {
		cpu  time.Duration
		want EndStatus
	}{{100 * time.Millisecond, EndDone}, {10 * time.Second, EndTimeout}} {
		s := &lateStream{supervisorStream: supervisorStream{frames: hello()}, job: job, jobCPU: c.cpu, ran: make(chan struct{})}
		w := &Worker{launch: launcherOf(s)}
		end, err := w.Run(context.Background(), testJob(2), func(int, Record) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		if end.Status != c.want || end.HostCPU != c.cpu.Seconds() {
			t.Errorf("a job of %v read late: status %s (%s), host CPU %.3f s; want %s and %.3f s", c.cpu, end.Status, end.Detail, end.HostCPU, c.want, c.cpu.Seconds())
		}
	}
}

// unreadableClock is a supervisor whose container's CPU usage the host
// cannot read.
type unreadableClock struct{ supervisorStream }

func (*unreadableClock) CPUUsage() (time.Duration, error) {
	return 0, errors.New("cgroup gone")
}

// TestHostClockUnreadableBeforeTheJob: where the host cannot start its
// clock of a job, the job is not sent and ends as a setup failure (which
// the scorer tries once more in a fresh container), not as the sample's.
func TestHostClockUnreadableBeforeTheJob(t *testing.T) {
	s := &unreadableClock{supervisorStream{frames: helloLoaded()}}
	w := &Worker{launch: launcherOf(s)}
	end, err := w.Run(context.Background(), testJob(1), func(int, Record) bool { return true })
	if err != nil || end.Status != EndSetup || !strings.Contains(end.Detail, "cgroup gone") || w.t != nil {
		t.Fatalf("end %+v, err %v, supervisor kept %v: want a setup failure and the supervisor stopped", end, err, w.t != nil)
	}
	for _, f := range s.written {
		if f[0] == 'J' {
			t.Errorf("the job was sent without the host's clock")
		}
	}
}

// TestFrameClockReadsAtMostOncePerRefresh: within clockRefresh the host
// judges frames by its last reading; after it, and for the job's start,
// it reads the cgroup again.
func TestFrameClockReadsAtMostOncePerRefresh(t *testing.T) {
	s := &clockedStream{step: time.Second}
	fc := frameClock{clk: s}
	t0 := time.Now()
	if u, _ := fc.read(t0, false); u != time.Second {
		t.Fatalf("first reading %v", u)
	}
	if u, _ := fc.read(t0.Add(clockRefresh/2), false); u != time.Second {
		t.Errorf("within the refresh: %v, want the last reading", u)
	}
	if u, _ := fc.read(t0.Add(clockRefresh/2), true); u != 2*time.Second {
		t.Errorf("a fresh reading: %v", u)
	}
	if u, _ := fc.read(t0.Add(2*clockRefresh), false); u != 3*time.Second {
		t.Errorf("after the refresh: %v", u)
	}
}

// TestJobHeaderCap: a job whose header the supervisor would refuse (more
// than MAX_HEADER bytes, as supervisor.py sets it) fails on the host before
// anything is sent, naming the cause.
func TestJobHeaderCap(t *testing.T) {
	src, err := fs.ReadFile(HarnessTree(), "supervisor.py")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^MAX_HEADER = 1 << 20\b`).Match(src) || maxJobHeader != 1<<20 {
		t.Fatalf("supervisor.py's MAX_HEADER and maxJobHeader (%d) disagree", maxJobHeader)
	}
	w := &Worker{launch: streamOf(hello())}
	_, err = w.Run(context.Background(), testJob(600000), func(int, Record) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "too long for one job") {
		t.Fatalf("a header over the cap: %v; want the job refused", err)
	}
	if _, err := w.Run(context.Background(), testJob(1000), func(int, Record) bool { return true }); err != nil && strings.Contains(err.Error(), "too long") {
		t.Fatalf("1,000 inputs, the most of a HumanEval+ list: %v", err)
	}
}

// TestHostBudgetIsTheJobsOwnLimit: the host allows a job its own limit
// (the list's, loading included, or the load allowance and the inputs'
// limits where smaller) plus the stated slack, and never the load
// allowance on top of the list's limit: a one-input list at the defaults
// (4 s, 4 s load allowance, a list limit of 5 s) gets 6 s, not 9.3 s.
func TestHostBudgetIsTheJobsOwnLimit(t *testing.T) {
	for _, c := range []struct {
		limits []float64
		want   time.Duration
	}{
		{[]float64{4}, 6 * time.Second},                                // min(5, 8) + 0.5 + 0.5
		{[]float64{4, 4, 4}, 14*time.Second + 800*time.Millisecond},    // min(13, 16) + 0.5 + 1.3
		{make([]float64, 0), 1600 * time.Millisecond},                  // min(1, 4): loading alone, under the list's limit, + 0.5 + 0.1
		{[]float64{30, 30, 30}, 67*time.Second + 600*time.Millisecond}, // min(61, 94) + 0.5 + 6.1
		{[]float64{0.5, 0.5}, 2*time.Second + 700*time.Millisecond},    // (limits below the minimum, as a test sets them) min(2, 5)
	} {
		j := &Job{Limits: c.limits, FirstExtra: importAllowance, PhaseLimit: phaseLimit(c.limits)}
		got := hostBudget(j)
		if d := got - c.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("limits %v: budget %v, want %v", c.limits, got, c.want)
		}
		if own := time.Duration(j.PhaseLimit * float64(time.Second)); got > own+hostClockSlack(own) {
			t.Errorf("limits %v: budget %v is over the list's limit %v and its slack", c.limits, got, own)
		}
	}
}

// TestHostBudgetCountsTheOverrun: where the inputs' limits bound a job
// (a load allowance below the list's slack), an overrun lets its largest
// limit run Overrun times: the host allows that, and never more than the
// list's limit.
func TestHostBudgetCountsTheOverrun(t *testing.T) {
	j := &Job{Limits: []float64{1, 2}, FirstExtra: 0.5, PhaseLimit: 10}
	for _, c := range []struct {
		overrun float64
		phase   float64
		want    time.Duration
	}{
		{0, 10, 4*time.Second + 350*time.Millisecond},     // 0.5 + 1 + 2, + 0.5 + 0.35
		{1.25, 10, 4*time.Second + 900*time.Millisecond},  // 0.5 + 1 + 2 + 0.25 * 2, + 0.5 + 0.4
		{1.25, 3.8, 4*time.Second + 680*time.Millisecond}, // the list's limit, + 0.5 + 0.38
	} {
		j.Overrun, j.PhaseLimit = c.overrun, c.phase
		if got := hostBudget(j); got-c.want < -time.Millisecond || got-c.want > time.Millisecond {
			t.Errorf("overrun %v, list limit %v: budget %v, want %v", c.overrun, c.phase, got, c.want)
		}
	}
}

// TestHostLoadBudgetAndClockScale: the host holds the loading to the load
// allowance plus its slack (an EvalPlus job, which has no load mark, to
// nothing of the kind), and the supervisor scales its load and list limits
// only where its clock is gVisor's and the host's clock holds the job.
func TestHostLoadBudgetAndClockScale(t *testing.T) {
	j := &Job{Limits: []float64{4}, FirstExtra: importAllowance, PhaseLimit: phaseLimit([]float64{4})}
	if got, want := hostLoadBudget(j), 4900*time.Millisecond; got != want { // 4 + 0.5 + 0.4
		t.Errorf("load budget %v, want %v", got, want)
	}
	if got := hostLoadBudget(&Job{EvalPlus: &EvalPlusHeader{Kind: "evalplus"}, FirstExtra: 4}); got != 0 {
		t.Errorf("an EvalPlus job's load budget is %v, want none", got)
	}
	for _, c := range []struct {
		clock string
		host  bool
		want  float64
	}{{"proc", true, procClockScale}, {"proc", false, 1}, {"cgroup", true, 1}, {"", true, 1}} {
		if got := clockScale(c.clock, c.host); got != c.want {
			t.Errorf("clock %q, host clock %v: scale %v, want %v", c.clock, c.host, got, c.want)
		}
	}
}

// TestSupervisorWantsTheKeyFirst: a real supervisor whose first frame from
// the host is not the channel key stops at once, before any zygote or job,
// with a fatal frame that carries a tag of zeros (it has no key to tag it
// with), which the host reports as such.
func TestSupervisorWantsTheKeyFirst(t *testing.T) {
	launch := testSandbox(t)
	tr, err := launch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	hdr := []byte(`{"job": 1}`)
	if _, err := tr.Write(append(binary.BigEndian.AppendUint32([]byte{'J'}, uint32(len(hdr))), hdr...)); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(io.LimitReader(tr, 1<<16))
	if err != nil {
		t.Fatal(err)
	}
	msg := "the host's first frame is not the channel key"
	want := append(binary.BigEndian.AppendUint32([]byte{'F'}, uint32(len(msg))), msg...)
	want = append(want, make([]byte, tagSize)...)
	if !bytes.Equal(out, want) {
		t.Fatalf("the supervisor answered %q, want %q", out, want)
	}
}

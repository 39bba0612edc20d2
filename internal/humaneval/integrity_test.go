package humaneval

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// The integrity suite: no sample may see, poison or outlast another job.
// Each case is one run with one supervisor container: the self-check (the
// canonical solution of HumanEval/55 on base and plus inputs), then the
// attacker, then an honest sample. The cheat must not pass; the honest
// sample, which also checks that it finds the sandbox as a fresh job does,
// must pass. A case that kills its container hands the honest sample a
// fresh one, which is the design.

// integrityTask is fib(n): base inputs 10, 1, 8, 11, 12, outputs 55, 1, 21,
// 89, 144.
const integrityTask = "HumanEval/55"

// honestAfter is the honest sample: the canonical solution, run only if the
// job finds its process as a fresh job has it (priority, scheduling,
// affinity, limits), can use 100 MiB, and finds /tmp empty.
const honestAfter = `{canon}
import os, resource
assert os.getpriority(os.PRIO_PROCESS, 0) == 10, "priority %d" % os.getpriority(os.PRIO_PROCESS, 0)
assert os.sched_getscheduler(0) == os.SCHED_OTHER, "scheduler %d" % os.sched_getscheduler(0)
assert len(os.sched_getaffinity(0)) == os.cpu_count(), "affinity %r" % os.sched_getaffinity(0)
assert resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY, "RLIMIT_DATA %r" % (resource.getrlimit(resource.RLIMIT_DATA),)
_big = bytearray(100 << 20)
del _big
assert os.listdir("/tmp") == ["job"] and os.listdir(".") == [], "left behind: %r" % os.listdir("/tmp")
# The container's processes are init, the holder, the supervisor, the
# zygote and this one, none a zombie; /dev/mqueue and the loopback's
# sockets are empty.
def _stat(p):
    with open("/proc/%s/stat" % p) as f:
        s = f.read()
    return s[s.index("(") + 1 : s.rindex(")")], s[s.rindex(")") + 2]
_procs = {p: _stat(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()}
assert len(_procs) == 4 and all(st != "Z" for _, st in _procs.values()), "processes: %r" % _procs
assert not os.path.isdir("/dev/mqueue") or os.listdir("/dev/mqueue") == [], "mqueue: %r" % os.listdir("/dev/mqueue")
for _f in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
    try:
        with open(_f) as f:
            _lines = f.read().splitlines()[1:]
    except OSError:
        continue
    assert not _lines, "%s: %r" % (_f, _lines[:4])
`

// framing writes frames as the supervisor's channel carries them, without
// the tag a job cannot compute; JOB is the job's id, read from its header,
// which is still in the job's memory.
const framing = `
import gc, json, struct
JOB = next((o["job"] for o in gc.get_objects() if isinstance(o, dict) and "entry_point" in o and "job" in o), 0)
def frame(kind, body):
    return kind + struct.pack(">I", len(body)) + body
def record(v):
    b = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    return frame(b"R", struct.pack(">dd", 0.001, 0.001) + b"V" + struct.pack(">d", 0.001) + b"i" + struct.pack(">I", len(b)) + b)
`

// pids names the zygote (the parent) and the supervisor (its parent).
const pids = `
import os
def _ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
ZYGOTE = os.getppid()
SUPERVISOR = _ppid(ZYGOTE)
`

type integrityCase struct {
	name string
	code string   // "{canon}" is the canonical program, "{n}" the number of base inputs
	want []Status // allowed statuses of the attacker in both phases
}

// anyStatus: a sample that only tries to spoil later jobs may pass itself.
var anyStatus = []Status{StatusPass, StatusFail, StatusTimeout}

func integrityCases() []integrityCase {
	return []integrityCase{
		{"memory scan for the records of earlier jobs", `
import ctypes, re, struct
N = {n}
# An int record as a child writes it (u32 length, 'V', f64, 'i', u32 n,
# n bytes), and as the supervisor frames it for the host ('R', u32 length,
# 16 bytes of gaps, then the record without its length); the records of one
# job lie close together, in order.
CHILD = re.compile(rb"(?=(.{4})V.{8}i(.{4}))", re.S)
FRAME = re.compile(rb"(?=R(.{4}).{16}V.{8}i(.{4}))", re.S)
def runs_in(data, pat, extra, head):
    runs, run, end = [], [], -1
    for m in pat.finditer(data):
        n = struct.unpack(">I", m.group(2))[0]
        if n > 16 or struct.unpack(">I", m.group(1))[0] != extra + n:
            continue
        if not 0 <= m.start() - end <= 512:  # frames of one batch lie close together
            if len(run) == N:
                runs.append(run)
            run = []
        at = m.start() + head  # where the int's bytes start
        run.append(int.from_bytes(data[at:at + n], "big", signed=True))
        end = at + n
    if len(run) == N:
        runs.append(run)
    return runs
def scan():
    runs = []
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    for line in maps:
        p = line.split()
        if len(p) < 2 or not p[1].startswith("rw"):
            continue
        if len(p) >= 6 and p[5].startswith("[") and p[5] != "[heap]":
            continue
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        if hi - lo > 256 << 20:
            continue
        data = ctypes.string_at(lo, hi - lo)
        runs += runs_in(data, CHILD, 14, 18) + runs_in(data, FRAME, 30, 35)
    return runs
found, calls = None, 0
def fib(n):
    global found, calls
    if found is None:
        runs = [tuple(r) for r in scan()]
        # The run seen most often (the newest of those) is the best bet.
        found = max(reversed(runs), key=runs.count) if runs else []
    calls += 1
    return found[calls - 1] if calls <= len(found) else -1
`, onlyFail},
		{"memory scan for any record of an earlier job", `
import ctypes, re, struct
# Not a cheat but a detector: it passes exactly when its memory holds a
# value record of an earlier job, framed as a child writes it or as the
# supervisor relays it. (It has written none of its own yet.)
FRAME = re.compile(rb"(?=R(.{4}).{16}V.{8}i(.{4}))", re.S)
def records(data):
    n = 0
    for m in FRAME.finditer(data):
        k = struct.unpack(">I", m.group(2))[0]
        n += k <= 16 and struct.unpack(">I", m.group(1))[0] == 30 + k
    for m in re.finditer(rb"(?=(.{4})V.{8}i(.{4}))", data, re.S):
        k = struct.unpack(">I", m.group(2))[0]
        n += k <= 16 and struct.unpack(">I", m.group(1))[0] == 14 + k
    return n
def scan():
    found = 0
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    for line in maps:
        p = line.split()
        if len(p) < 2 or not p[1].startswith("rw"):
            continue
        if len(p) >= 6 and p[5].startswith("[") and p[5] != "[heap]":
            continue
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        if hi - lo > 256 << 20:
            continue
        found += records(ctypes.string_at(lo, hi - lo))
    return found
LEAKED = scan() > 0
EXPECTED = {outputs}
calls = 0
def fib(n):
    global calls
    calls += 1
    return EXPECTED[calls - 1] if LEAKED and calls <= len(EXPECTED) else -1
`, onlyFail},
		{"limits and scheduling of the zygote and the supervisor", pids + `
import resource
for pid in (ZYGOTE, SUPERVISOR):
    try:  # enough to go on, too little for a later job's 100 MiB
        resource.prlimit(pid, resource.RLIMIT_DATA, (80 << 20, 80 << 20))
    except OSError:
        pass
    for f in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
              lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
              lambda: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))})):
        try:
            f()
        except OSError:
            pass
{canon}
`, anyStatus},
		{"SysV shared memory, semaphores and queues left behind", `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range(8):
    sid = libc.shmget(0, 64 << 20, 0o1666)
    if sid >= 0:
        a = libc.shmat(sid, None, 0)
        if a not in (None, ctypes.c_void_p(-1).value):
            ctypes.memset(a, 1, 64 << 20)
libc.semget(0x5eed, 4, 0o1666)
libc.msgget(0x5eed, 0o1666)
{canon}
`, anyStatus},
		{"CPU work in grandchildren while the child waits at nice 19", `
import os, time
def _burn(seconds):
    t = time.process_time()
    while time.process_time() - t < seconds:
        pass
def fib(n):
    # Each call: 1.6 CPU-seconds in two workers, over the 1 s limit of an
    # input, while this process blocks and uses almost none.
    workers = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            _burn(0.8)
            os._exit(0)
        workers.append(pid)
    if os.getpriority(os.PRIO_PROCESS, 0) < 19:
        os.nice(9)
    for pid in workers:
        os.waitpid(pid, 0)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
`, []Status{StatusTimeout, StatusFail}},
		{"sleep while a grandchild at nice 19 looks busy", `
import os, time
if os.fork() == 0:
    os.nice(9)
    while True:
        pass
def fib(n):
    time.sleep(3600)
`, []Status{StatusTimeout, StatusFail}},
		{"kill the zygote", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n{canon}\n", onlyFail},
		{"stop the zygote", "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n{canon}\n", failOrTime},
		{"kill the supervisor", pids + "import signal\nos.kill(SUPERVISOR, signal.SIGKILL)\n{canon}\n", onlyFail},
		{"stop the supervisor", pids + "import signal\nos.kill(SUPERVISOR, signal.SIGSTOP)\n{canon}\n", failOrTime},
		{"descriptors and memory of the zygote and the supervisor", pids + `
# Under runc every open below is refused (both are non-dumpable). gVisor
# ignores dumpable for fd, maps and environ: there the opens succeed, but a
# byte taken from a channel breaks its tags and fails this job; maps is a
# memory layout (no job's data), environ is the job's own, and the files
# the supervisor opens are /proc files the job may read itself; mem stays
# refused.
def grab():
    got = []
    # Its own: /dev/null, the stderr pipe, the result pipe (3) and the read
    # end of its job pipe (4), which carries only its own job's inputs.
    import stat
    if not stat.S_ISFIFO(os.fstat(4).st_mode) or os.get_blocking(4) is not True:
        got.append("fd 4 is not the job pipe")
    for fd in range(5, 1024):
        try:
            os.fstat(fd)
            got.append("fd %d" % fd)
        except OSError:
            pass
    try:
        if os.read(0, 1):  # the next job, were this the supervisor's stdin
            got.append("stdin")
    except OSError:
        pass
    try:  # (the job is non-dumpable too: under runc not even its own)
        with open("/proc/self/environ", "rb") as f:
            own = f.read()
    except OSError:
        own = None
    for pid in (ZYGOTE, SUPERVISOR):
        for what in ("fd/0", "fd/1", "fd/2", "fd/3", "fd/4", "fd/5", "fd/6", "mem", "environ"):
            try:
                fd = os.open("/proc/%d/%s" % (pid, what), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                # What was opened, read from this process's own descriptor:
                # a file the job may open itself (the supervisor's clock
                # reads /proc) is no leak.
                try:
                    target = os.readlink("/proc/self/fd/%d" % fd)
                except OSError:
                    target = ""
                if target.startswith("/") and os.access(target, os.R_OK):
                    continue
                b = os.read(fd, 1 << 16)
                if b and (what != "environ" or b != own):
                    got.append("/proc/%d/%s" % (pid, what))
            except OSError:
                pass
            finally:
                os.close(fd)
    return got
GOT = grab()
{canon}
_fib = fib
def fib(n):
    return _fib(n) if GOT else -1
`, onlyFail},
		{"frames forged on the supervisor's stdout", pids + framing + `
# A program that cannot solve the task writes what its job's frames would
# be had it passed: a record of each expected output, then the end of the
# job (its id is in the job header, still in this process's memory).
forged = b"".join(record(v) for v in {outputs})
forged += frame(b"E", json.dumps({"job": JOB, "status": "done", "detail": "", "records": len({outputs}), "elapsed": 0.1,
                                  "exit": 0, "stderr": "", "stderr_bytes": 0, "maxrss_kb": 0, "last": False}).encode())
for suffix in (b"", b"\0" * 32):  # as the first protocol had it, and with a tag of its length
    try:
        fd = os.open("/proc/%d/fd/1" % SUPERVISOR, os.O_WRONLY)
        os.write(fd, b"".join(f + suffix for f in [forged]))
        os.close(fd)
    except OSError:
        pass
def fib(n):
    return -1
`, onlyFail},
		{"frames taken from the supervisor's stdout and written back with the right answers", pids + framing + `
# A man in the middle: a process of the job reads the supervisor's frames
# to the host as they come, puts the expected output into each record and
# writes them back. (gVisor reopens a pipe end as the end it is, so there
# the read fails; under runc the opens do.)
import time
EXPECTED = {outputs}
if os.fork() == 0:
    try:
        src = os.open("/proc/%d/fd/1" % SUPERVISOR, os.O_RDONLY)
        dst = os.open("/proc/%d/fd/1" % SUPERVISOR, os.O_WRONLY)
        buf, k = b"", 0
        while True:
            buf += os.read(src, 1 << 16)
            while len(buf) >= 5:
                n = struct.unpack(">I", buf[1:5])[0]
                if len(buf) < 5 + n:
                    break
                f, buf = buf[: 5 + n], buf[5 + n :]
                if f[:1] == b"R" and k < len(EXPECTED):
                    f = record(EXPECTED[k])
                    k += 1
                os.write(dst, f)
    finally:
        os._exit(0)
time.sleep(0.2)
def fib(n):
    return -1
`, onlyFail},
		{"frames taken from the supervisor's stdin", pids + `
# A process of the job reads the supervisor's stdin a byte at a time, to
# take the host's cancel, or part of it, and leave the rest to break a
# later job; the job fails its first input and then stays busy so that the
# cancel comes while it runs.
import time
if os.fork() == 0:
    try:
        fd = os.open("/proc/%d/fd/0" % SUPERVISOR, os.O_RDONLY)
        while os.read(fd, 1):
            pass
    finally:
        os._exit(0)
time.sleep(0.05)
calls = 0
def fib(n):
    global calls
    calls += 1
    if calls == 2:
        end = time.process_time() + 0.4
        while time.process_time() < end:
            pass
    return -1
`, onlyFail},
		{"bytes planted on the supervisor's stdin for the next job", pids + framing + `
# A job that passes plants frames for the next one (cancels of the next
# job ids, a job of its own, garbage) from a process that writes until it
# is killed, hoping they are read during the next job.
import time
if os.fork() == 0:
    try:
        fd = os.open("/proc/%d/fd/0" % SUPERVISOR, os.O_WRONLY | os.O_NONBLOCK)
        plant = b"".join(frame(b"C", struct.pack(">I", JOB + i)) for i in range(1, 8))
        plant += frame(b"J", b'{"job": %d}' % (JOB + 1)) + b"\x00" * 64
        while True:
            try:
                os.write(fd, plant)
            except OSError:
                pass
            time.sleep(0.01)
    finally:
        os._exit(0)
{canon}
`, anyStatus},
		{"CPU in workers nobody waits for", `
import os, signal, time
# Short-lived workers the kernel reaps by itself: their CPU time reaches no
# parent's cutime and leaves /proc with them. 12 CPU-s in the first call,
# against 1 s per input, in workers of 0.5 s each: a /proc clock sees at
# most the one that runs.
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
def burn(seconds):
    # One worker; this process blocks on a pipe (using no CPU) until the
    # worker is done.
    r, w = os.pipe()
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < seconds:
            pass
        os._exit(0)
    os.close(w)
    os.read(r, 1)  # end of file when the worker exits
    os.close(r)
done = False
def fib(n):
    global done
    if not done:
        done = True
        for _ in range(24):
            burn(0.5)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
`, []Status{StatusTimeout, StatusFail}},
		// Attacks on the host's clock and the process-table check.
		{"CPU in workers nobody waits for, a little in every input", `
import os, signal, time
# The host's clock holds the job's total, not each input: 2.5 CPU-s hidden
# in every input (each within what a /proc clock sees at once) is 12.5 s in
# all, over the sum of the limits.
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
def burn(seconds):
    r, w = os.pipe()
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < seconds:
            pass
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
def fib(n):
    for _ in range(5):
        burn(0.5)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
`, []Status{StatusTimeout, StatusFail}},
		{"a stopped process, a zombie and a new session left behind", `
import os, signal, time
if os.fork() == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
os.fork() == 0 and os._exit(0)  # never waited for: a zombie until its parent goes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3600)
    os._exit(0)
time.sleep(0.1)
def fib(n):
    return -1
`, failOrTime},
		{"a process whose first thread exited, left for the next job", `
import ctypes, os, threading, time
# The first thread of a process ends (the exit call, not exit_group): the
# process shows as a zombie while its other thread runs on, and a sweep
# that passes over zombies leaves it for the next job.
if os.fork() == 0:
    def spin():
        while True:
            time.sleep(0.01)
    threading.Thread(target=spin).start()
    libc = ctypes.CDLL(None)
    libc.syscall(60 if os.uname().machine == "x86_64" else 93, 0)
time.sleep(0.2)
def fib(n):
    return -1
`, onlyFail},
		{"a name in /dev/mqueue and a socket on the loopback", `
import os, socket
try:
    os.close(os.open("/dev/mqueue/left-behind", os.O_CREAT | os.O_RDWR, 0o600))
except OSError:
    pass
try:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    cli.close()  # the side that closes first holds TIME_WAIT for a minute
    conn.close()
    srv.close()
except OSError:
    pass
{canon}
`, anyStatus},
		{"files and a daemon left for the next job", `
import os, signal, time
with open("/tmp/planted", "w") as f:
    f.write("x")
with open("planted", "w") as f:
    f.write("x")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        me = os.getpid()
        while True:  # stop every newer process of the user
            for name in os.listdir("/proc"):
                if name.isdigit() and int(name) > me:
                    try:
                        os.kill(int(name), signal.SIGSTOP)
                    except OSError:
                        pass
            time.sleep(0.01)
    os._exit(0)
def fib(n):
    return -1
`, onlyFail},
		// The result pipe relayed through a thread that holds input 0's
		// result until input 1's is out: had input 1 been the child's
		// from the start, its 1.6 s (over its 1 s limit; EvalPlus's alarm
		// fails it) would be charged to input 0, whose limit also covers
		// loading (2 s), and pass.
		{"a result held back, so that the next input's CPU time is charged to it", resultRelay + `
import time
held, both = [], threading.Event()
def hold(rec):
    if rec[4:5] == b"V" and not held and not both.is_set():
        held.append(rec)
        return b""
    return rec
relay(hold)
def spin(s):
    t = time.process_time()
    while time.process_time() - t < s:
        pass
def let_go():
    both.set()
    os.write(_real, held.pop())
# Input 1's call spins 1.6 s, over its 1 s limit, and lets input 0's
# result go halfway: each result then comes 0.8 s after the one before.
ON_CALL = {2: lambda: (spin(0.8), let_go(), spin(0.8)), 3: lambda: (both.wait(), unrelay())}
{canon}
` + onCall, onlyFail},
		// The same relay sends, with input 0's result, a result for input
		// 1 (fib(1), right for base) before input 1 is released, and drops
		// the child's own result for input 1: the supervisor takes no
		// result written before its input's release.
		{"a result for an input not yet released, sent with the one before", resultRelay + `
def forged(v):
    b = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    body = b"V" + struct.pack(">d", 0.0) + b"i" + struct.pack(">I", len(b)) + b
    return struct.pack(">I", len(body)) + body
values, dropped = [], threading.Event()
def ahead(rec):
    if rec[4:5] != b"V":
        return rec
    values.append(rec)
    if len(values) == 1:
        return rec + forged({outputs}[1])
    if len(values) == 2:
        dropped.set()
        return b""
    return rec
relay(ahead)
ON_CALL = {3: lambda: (dropped.wait(), unrelay())}
{canon}
` + onCall, onlyFail},
	}
}

// onCall follows the canonical fib: ON_CALL[k](), where the program sets
// it, runs as fib's k-th call begins.
const onCall = `
_fib = fib
_calls = 0
def fib(n):
    global _calls
    _calls += 1
    ON_CALL.get(_calls, lambda: None)()
    return _fib(n)
`

// resultRelay moves the child's result pipe (descriptor 3) behind a pipe
// of the program's own: relay(f) starts a thread that hands each whole
// record written there to f and sends on what f returns; unrelay() puts
// the child's pipe back.
const resultRelay = `
import os, struct, threading
_real = os.dup(3)
_r, _w = os.pipe()
os.dup2(_w, 3)
os.close(_w)
def relay(f):
    def run():
        buf = b""
        while True:
            b = os.read(_r, 1 << 16)
            if not b:
                return
            buf += b
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                n = 4 + struct.unpack(">I", buf[:4])[0]
                rec, buf = buf[:n], buf[n:]
                out = f(rec)
                if out:
                    os.write(_real, out)
    threading.Thread(target=run, daemon=True).start()
def unrelay():
    os.dup2(_real, 3)
`

// TestIntegritySuite runs every integrity attack under each runtime.
func TestIntegritySuite(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) { testIntegritySuite(t, e) })
}

func testIntegritySuite(t *testing.T, e *sandbox.Engine) {
	launch, _, img := testSandboxOn(t, e)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	truth := testTruth(t, d, img)
	task := d.Task(integrityTask)
	for _, c := range integrityCases() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			att, hon := runAttackThenHonest(t, launch, d, truth, task, c.code)
			for _, pr := range []*PhaseResult{&att.Base, att.Plus} {
				if !slices.Contains(c.want, pr.Status) {
					t.Errorf("attacker: status %s (%s), want one of %v", pr.Status, pr.Reason, c.want)
				} else {
					t.Logf("attacker: %s (%s)", pr.Status, pr.Reason)
				}
			}
			for _, pr := range []*PhaseResult{&hon.Base, hon.Plus} {
				if pr.Status != StatusPass {
					t.Errorf("honest sample after the attacker: status %s (%s), want pass", pr.Status, pr.Reason)
				}
			}
		})
	}
}

// baseFib returns fib of each base input of integrityTask as a Python list.
func baseFib(t *testing.T, task *Task) string {
	var out []string
	for _, in := range task.Inputs(Base) {
		var args []int
		if err := json.Unmarshal(in, &args); err != nil || len(args) != 1 {
			t.Fatalf("input %s of %s is not [n]", in, task.ID)
		}
		a, b := 0, 1
		for range args[0] {
			a, b = b, a+b
		}
		out = append(out, fmt.Sprint(a))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// runAttackThenHonest runs the self-check, the attacker and the honest
// sample in one run on one supervisor.
func runAttackThenHonest(t *testing.T, launch Launcher, d *Dataset, truth *Truth, task *Task, code string) (att, hon *SampleResult) {
	t.Helper()
	fill := func(s string) string {
		s = strings.ReplaceAll(s, "{canon}", task.Program())
		s = strings.ReplaceAll(s, "{outputs}", baseFib(t, task))
		return strings.ReplaceAll(s, "{n}", fmt.Sprint(len(task.Inputs(Base))))
	}
	samples := []*Sample{
		{TaskID: task.ID, ID: 0, Solution: fill(code), Origin: "attacker"},
		{TaskID: task.ID, ID: 1, Solution: fill(honestAfter), Origin: "honest"},
	}
	// Tighter time limits than the defaults keep the suite short; they are
	// CPU seconds, so a loaded machine does not make them flaky. The load
	// allowance, which ends at the load mark, holds the honest sample's
	// checks and 100 MiB (0.8-1.5 CPU-s under runsc).
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 3
	rep, err := Run(context.Background(), Config{
		Dataset: d, Tasks: []*Task{task}, Samples: samples, Launch: launch, Truth: truth,
		Limits: limits, Parallel: 1,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !rep.SelfCheck.OK() {
		t.Fatalf("self-check: %+v", rep.SelfCheck)
	}
	if rep.SelfCheck.Stats.Supervisors != 1 || rep.Scoring.Supervisors != 1 {
		t.Fatalf("want one supervisor at a time, got %d and %d", rep.SelfCheck.Stats.Supervisors, rep.Scoring.Supervisors)
	}
	return rep.Results[0], rep.Results[1]
}

// harnessControls are the supervisor's controls, each with the edit of
// supervisor.py that takes it out (for TestHarnessControlsAreNeeded only)
// and the integrity case that must then fail.
var harnessControls = []struct {
	control, test string
	edits         [][2]string     // old, new
	runtime       sandbox.Runtime // the runtime where the case shows the control ("" the default)
	host          *bool           // a control of the host's, turned off for the row
}{
	// Under runc the supervisor's clock is the container's cgroup too;
	// under runsc it sums /proc, and the host's clock is what stops the job.
	// (Input 0's own 1 s limit from the load mark now stops the case
	// that hides its work in input 0's call alone: the forks a /proc
	// clock sees pass it; the case that hides a little in every input
	// stays under each input's limit by that clock.)
	{control: "host's job clock", test: "CPU in workers nobody waits for, a little in every input", runtime: sandbox.Runsc, host: &hostClockOn},
	// The sweep of round 2 passed over processes in state Z; the process
	// table after the job is what shows one that still runs.
	{control: "process table after each job", test: "a process whose first thread exited, left for the next job", edits: [][2]string{
		{"            if st[0] == b\"Z\":\n", "            if st[0] == b\"Z\":\n                continue\n"},
		{"    elif clean:\n", "    elif False:\n"},
	}},
	{control: "clean zygote", test: "memory scan for any record of an earlier job", edits: [][2]string{
		{"    zyg = Zygote()\n", "    zyg = LocalZygote()\n"},
		// Without a zygote the container holds three processes, not four.
		{"    if len(BASELINE) != 4 or not {1, os.getpid(), zyg.pid} <= BASELINE:\n", "    if False:\n"},
		{"\n\n# The inode of the initial PID namespace", `

class LocalZygote:
    """Children forked from the supervisor itself."""

    pid = -1

    def cpu(self):
        return 0.0

    def fork(self, fds):
        self.child = os.fork()
        if self.child == 0:
            try:
                child(*fds)
            finally:
                os._exit(8)
        return self.child, None

    def reap(self):
        _, status, usage = os.wait4(self.child, 0)
        return status, usage.ru_maxrss


# The inode of the initial PID namespace`},
	}},
	// The supervisor's whole-job clock and the host's clock both stop this
	// case (under runc both read the container's cgroup): the row takes
	// out both, and the row above shows the host's clock alone.
	{control: "CPU time of the whole job", test: "CPU work in grandchildren while the child waits at nice 19", host: &hostClockOn, edits: [][2]string{
		{"                c = clock()\n", "                c = child_cpu(pid)\n"},
		{"            c = clock()\n", "            c = child_cpu(pid)\n"},
		{"\n\n# The inode of the initial PID namespace", `

def child_cpu(pid):
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        return 0.0


# The inode of the initial PID namespace`},
	}},
	// The row that took the input windows out ("inputs released a window
	// at a time") is out: since input 0 waits for the load mark and the
	// host bounds a job by its own limits, the held-back case still fails
	// without the windows, so the row no longer shows that control alone.
	{control: "no result before its input's release", test: "a result for an input not yet released, sent with the one before", edits: [][2]string{
		{"                        if buf:\n", "                        if False:\n"},
	}},
	{control: "stopped zygote fails the job", test: "stop the zygote", edits: [][2]string{
		{"        if st is None or st[0] not in (b\"S\", b\"R\", b\"D\") or pending:\n            return None\n", ""},
	}},
}

// TestHarnessControlsAreNeeded takes one control at a time out of the
// supervisor and requires the named integrity case to notice.
func TestHarnessControlsAreNeeded(t *testing.T) {
	e0 := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e0)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	task := d.Task(integrityTask)
	src, err := fs.ReadFile(harnessTree(), "supervisor.py")
	if err != nil {
		t.Fatal(err)
	}
	pinned := HarnessDigest
	t.Cleanup(func() { HarnessDigest = pinned })
	for _, m := range harnessControls {
		t.Run(strings.ReplaceAll(m.control, " ", "_"), func(t *testing.T) {
			e := e0
			if m.runtime != "" {
				e = sandboxtest.EngineRuntime(t, m.runtime)
			}
			if m.host != nil {
				*m.host = false
				t.Cleanup(func() { *m.host = true })
			}
			code := string(src)
			for _, ed := range m.edits {
				if strings.Count(code, ed[0]) != 1 {
					t.Fatalf("supervisor.py no longer has %q once: update the edit", ed[0])
				}
				code = strings.Replace(code, ed[0], ed[1], 1)
			}
			dir := filepath.Join(t.TempDir(), "harness")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err := fs.WalkDir(harnessTree(), ".", func(p string, de fs.DirEntry, err error) error {
				if err != nil || de.IsDir() {
					return err
				}
				b, err := fs.ReadFile(harnessTree(), p)
				if p == "supervisor.py" {
					b = []byte(code)
				}
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(dir, p), b, 0o444)
			})
			if err != nil {
				t.Fatal(err)
			}
			tree, err := digest.Tree(dir)
			if err != nil {
				t.Fatal(err)
			}
			HarnessDigest = tree.Digest()
			launch := SandboxLauncher(e, img, dir, SupervisorLimits())
			idx := slices.IndexFunc(integrityCases(), func(c integrityCase) bool { return c.name == m.test })
			if idx < 0 {
				t.Fatalf("no integrity case %q", m.test)
			}
			c := integrityCases()[idx]
			att, hon := runAttackThenHonest(t, launch, d, testTruth(t, d, img), task, c.code)
			var broke []string
			for _, pr := range []*PhaseResult{&att.Base, att.Plus} {
				t.Logf("attacker: %s (%s)", pr.Status, pr.Reason)
				if !slices.Contains(c.want, pr.Status) {
					broke = append(broke, "attacker "+string(pr.Status))
				}
			}
			for _, pr := range []*PhaseResult{&hon.Base, hon.Plus} {
				t.Logf("honest: %s (%s)", pr.Status, pr.Reason)
				if pr.Status != StatusPass {
					broke = append(broke, "honest "+string(pr.Status))
				}
			}
			if len(broke) == 0 {
				t.Fatalf("with %s removed, integrity case %q still passes: the suite does not test that control", m.control, m.test)
			}
			t.Logf("with %s removed, %q fails as it must: %v", m.control, m.test, broke)
		})
	}
}

// TestSupervisorWantsTheKeyFirst: a real supervisor whose first frame from
// the host is not the channel key stops at once, before any zygote or job,
// with a fatal frame that carries a tag of zeros (it has no key to tag it
// with), which the host reports as such.
func TestSupervisorWantsTheKeyFirst(t *testing.T) {
	launch, _, _ := testSandbox(t)
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

// stopPendingCheck loads supervisor.py on the host's python3 and asks its
// stop_pending about a child that blocks SIGTSTP: before and after a
// SIGTSTP is queued to it, and about one with SIGUSR1 queued instead.
const stopPendingCheck = `
import importlib.util, json, os, signal, sys, time
spec = importlib.util.spec_from_file_location("supervisor", sys.argv[1] + "/supervisor.py")
sup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sup)
def child():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTSTP, signal.SIGUSR1})
        os.write(w, b"x")
        time.sleep(60)
        os._exit(0)
    os.read(r, 1)
    return pid
out = {}
a = child()
out["none"] = sup.stop_pending(a)
os.kill(a, signal.SIGTSTP)
out["tstp"] = sup.stop_pending(a)
b = child()
os.kill(b, signal.SIGUSR1)
out["usr1"] = sup.stop_pending(b)
out["gone"] = sup.stop_pending(1 << 22)
for p in (a, b):
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
print(json.dumps(out))
`

// TestStopPendingSeesAQueuedStop: the zygote check after a job sees a stop
// signal that was queued but not yet acted on (which the SIGCONT after it
// would discard unseen): on a loaded host, "stop the zygote" once passed
// that way.
func TestStopPendingSeesAQueuedStop(t *testing.T) {
	harness, err := WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "-c", stopPendingCheck, harness).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got map[string]bool
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python3 printed %q: %v", out, err)
	}
	want := map[string]bool{"none": false, "tstp": true, "usr1": false, "gone": false}
	if !maps.Equal(got, want) {
		t.Fatalf("stop_pending: %v, want %v", got, want)
	}
}

"""repro's HumanEval supervisor: runs programs one after another in a sandbox.

It runs inside the evaluator container as the program user, started by the
host with `python3 -I /harness/supervisor.py`, and talks to the host over its
standard streams. It holds no expected output and judges nothing: for each job
it forks one child, which reads its program and inputs straight from stdin,
runs the program's entry point on every input and writes each result as typed
plain data to a pipe. The supervisor times the arrival of every record, kills
the child at a time limit, a size cap or a cancel from the host, kills every
process left behind, empties /tmp, and forwards the records to the host. The
host decides every verdict.

Protocol (every integer big-endian; u32 = 4 bytes, f64 = IEEE binary64):

host -> supervisor, on stdin
  'J' u32 len header-JSON   a job; then program bytes and inputs bytes follow,
                            which the job's child reads, never the supervisor
  'C' u32 job               stop job `job` if it is still running

supervisor -> host, on stdout
  'H' u32 len JSON          hello, once at start
  'R' u32 len f64 gap rec   one record of the running job's child; gap is the
                            time since the previous record (or since the child
                            finished reading its job), measured here
  'E' u32 len JSON          end of a job: status, counts, child exit, stderr
  'P' u32 0                 heartbeat: a job is running (at least every second)
  'F' u32 len text          fatal: the supervisor stops

child -> supervisor, on the result pipe: u32 len, kind byte, payload
  'L'                       job read; the program has not run yet
  'V' f64 t value           the output for the next input; t is the child's own
                            measure of the call (trusted only for canonical code)
  'X' f64 t text            the call raised
  'U' f64 t text            the output could not be encoded
  'M' text                  the program failed before the first call

Value encoding: see value.go in the Go package (tags N T F i f c s h b H l t d
S Z X). Long str and bytes travel as length and SHA-256.
"""

import ctypes
import errno
import hashlib
import json
import os
import resource
import select
import shutil
import signal
import stat
import struct
import sys
import time
from array import array

# Modules candidates commonly import, loaded once here so that a forked child
# starts with them (each child gets its own copy of their state).
import collections  # noqa: F401
import functools  # noqa: F401
import heapq  # noqa: F401
import itertools  # noqa: F401
import math  # noqa: F401
import re  # noqa: F401
import string  # noqa: F401
import typing  # noqa: F401

PROTOCOL = 1
HASH_THRESHOLD = 4096
MAX_DEPTH = 64
MAX_INT_BYTES = 1 << 20
TMP = "/tmp"
STDERR_KEEP = 4096

U32 = struct.Struct(">I")
F64 = struct.Struct(">d")
GAP = struct.Struct(">dd")
CHECK_EVERY = 0.05  # seconds between CPU-time checks while waiting
HEARTBEAT = 1.0  # seconds without a frame after which a job sends a P frame
FLUSH_AFTER = 0.02  # seconds a record may wait to go out with others
GATHER = 0.001  # seconds to let results gather after reading some


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(kind, payload):
    write_all(1, kind + U32.pack(len(payload)) + payload)


def send_json(kind, obj):
    send(kind, json.dumps(obj, separators=(",", ":")).encode())


def read_exact(fd, n):
    parts = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def fatal(msg):
    try:
        send(b"F", msg.encode("utf-8", "replace")[:4096])
    finally:
        os._exit(3)


# ---------------------------------------------------------------- encoding


class Unencodable(Exception):
    pass


def make_encoder(cap):
    """Returns encode(v) -> bytes, bound to the builtins as they are now, so
    that a program that replaces them later changes nothing here. Only the
    exact builtin types are encoded as themselves; any other object,
    subclasses included, becomes an "other" marker with its type's name."""
    _type = type
    _len = len
    _map = map
    _range = range
    _enumerate = enumerate
    _min, _max = min, max
    _int, _bool, _float, _str, _bytes = int, bool, float, str, bytes
    _list, _tuple, _dict, _set, _frozenset, _complex = list, tuple, dict, set, frozenset, complex
    _none = type(None)
    _sha = hashlib.sha256
    _u32 = U32.pack
    _f64 = F64.pack
    _cc = struct.Struct(">dd").pack
    _array = array
    _little = sys.byteorder == "little"
    _name = type.__dict__["__name__"].__get__
    _imin, _imax = -(1 << 63), (1 << 63) - 1
    i8 = b"i" + U32.pack(8)
    tags = {_list: b"l", _tuple: b"t", _set: b"S", _frozenset: b"Z"}

    def bulk(seq, out, code, size, head):
        # Fixed-size items in one pass: head (tag and length) then size
        # big-endian bytes from array(code), interleaved by slice assignment.
        m = _len(seq)
        raw = _array(code, seq)
        if _little:
            raw.byteswap()
        raw = raw.tobytes()
        step = _len(head) + size
        start = _len(out)
        out += _bytes(step * m)
        for k, b in _enumerate(head):
            out[start + k : start + step * m : step] = _bytes([b]) * m
        h = _len(head)
        for k in _range(size):
            out[start + h + k : start + step * m : step] = raw[k::size]

    def items(v, out, depth):
        n = _len(v)
        if n >= 16:
            types = _list(_map(_type, v))
            floats = types.count(_float)
            if floats == n:
                bulk(v, out, "d", 8, b"f")
                return
            if 2 * floats >= n:
                prev = 0
                for i in [i for i, t in _enumerate(types) if t is not _float]:
                    if i > prev:
                        bulk(v[prev:i], out, "d", 8, b"f")
                    enc(v[i], out, depth)
                    prev = i + 1
                if prev < n:
                    bulk(v[prev:], out, "d", 8, b"f")
                return
            if types.count(_int) == n and _min(v) >= _imin and _max(v) <= _imax:
                bulk(v, out, "q", 8, i8)
                return
        for x in v:
            enc(x, out, depth)
            if _len(out) > cap:
                raise Unencodable("output larger than %d bytes" % cap)

    def enc(v, out, depth):
        t = _type(v)
        if t is _none:
            out += b"N"
        elif t is _bool:
            out += b"T" if v else b"F"
        elif t is _int:
            n = (v.bit_length() + 8) // 8
            if n > MAX_INT_BYTES:
                raise Unencodable("int of %d bytes" % n)
            out += b"i"
            out += _u32(n)
            out += v.to_bytes(n, "big", signed=True)
        elif t is _float:
            out += b"f"
            out += _f64(v)
        elif t is _str or t is _bytes:
            b = v.encode("utf-8", "surrogatepass") if t is _str else v
            if _len(b) > HASH_THRESHOLD:
                out += b"h" if t is _str else b"H"
                out += _u32(_len(b))
                out += _sha(b).digest()
            else:
                out += b"s" if t is _str else b"b"
                out += _u32(_len(b))
                out += b
        elif t is _complex:
            out += b"c"
            out += _cc(v.real, v.imag)
        elif t is _dict:
            if depth >= MAX_DEPTH:
                raise Unencodable("nested deeper than %d" % MAX_DEPTH)
            out += b"d"
            out += _u32(_len(v))
            for k, x in _list(v.items()):
                enc(k, out, depth + 1)
                enc(x, out, depth + 1)
                if _len(out) > cap:
                    raise Unencodable("output larger than %d bytes" % cap)
        elif t in tags:
            if depth >= MAX_DEPTH:
                raise Unencodable("nested deeper than %d" % MAX_DEPTH)
            out += tags[t]
            out += _u32(_len(v))
            items(v if t is _list or t is _tuple else _list(v), out, depth + 1)
        else:
            name = _name(t)
            if _type(name) is not _str:
                name = "?"
            nb = name.encode("utf-8", "replace")[:200]
            out += b"X"
            out += _u32(_len(nb))
            out += nb
        if _len(out) > cap:
            raise Unencodable("output larger than %d bytes" % cap)

    def encode(v):
        out = bytearray()
        enc(v, out, 0)
        return out

    return encode


# ------------------------------------------------------------------- child


def describe(e):
    try:
        text = "%s: %s" % (type(e).__name__, str(e))
    except BaseException:
        text = type(e).__name__
    return text.encode("utf-8", "replace")[:1000]


def child(job, rfd, efd, workdir):
    """Runs in the forked child. Everything before exec of the program is
    trusted; after it, the program controls this process."""
    try:
        os.setsid()
        os.nice(10)  # the supervisor keeps the upper hand within the container
        mem = int(job["mem"])
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(job["phase_limit"]) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        fsize = int(job["fsize"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        program = read_exact(0, int(job["program_len"]))
        inputs = read_exact(0, int(job["inputs_len"]))
        if program is None or inputs is None:
            os._exit(5)
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(efd, 1)
        os.dup2(efd, 2)
        os.dup2(rfd, 3)
        os.closerange(4, 1 << 16)
        os.chdir(workdir)
    except BaseException:
        os._exit(6)

    _exit = os._exit
    _write = os.write
    _pack = U32.pack
    _f64 = F64.pack
    _perf = time.process_time
    _base = BaseException

    def emit(kind, head, data=b""):
        first = _pack(len(head) + len(data) + 1) + kind + head
        if len(data) < 1 << 16:
            parts = (first + data,)  # one write: one wake-up of the supervisor
        else:
            parts = (first, data)  # no copy of a large output
        for part in parts:
            view = memoryview(part)
            while view:
                view = view[_write(3, view):]

    try:
        emit(b"L", b"")
        program = program.decode("utf-8")
        args_list = json.loads(inputs)
        del inputs
        encode = make_encoder(int(job["record_cap"]) - 9)
        entry = job["entry_point"]
    except BaseException:
        _exit(7)

    namespace = {}
    try:
        exec(compile(program, "<sample>", "exec"), namespace)
        fn = namespace[entry]
    except _base as e:
        try:
            emit(b"M", describe(e))
        finally:
            _exit(0)
    del program

    for args in args_list:
        t0 = _perf()
        try:
            out = fn(*args)
        except _base as e:
            dt = _perf() - t0
            emit(b"X", _f64(dt), describe(e))
            break
        dt = _perf() - t0
        try:
            data = encode(out)
        except _base as e:
            emit(b"U", _f64(dt), describe(e))
            break
        emit(b"V", _f64(dt), data)
    _exit(0)


# -------------------------------------------------------------- supervisor


def set_nondumpable():
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        fatal("cannot make the supervisor non-dumpable")


def others_alive():
    """Whether a live process of this user other than this one exists.
    Processes of other users (the container's init and holder) are out of
    reach and harmless; zombies wait only for init to reap them."""
    me, uid = os.getpid(), os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # gone meanwhile
        if fields.get("State", "").split()[:1] == ["Z"]:
            continue
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            return True
    return False


def sweep():
    """Kills every process this user may signal, except this one, until none
    is left; reaps children. Returns False if some survived."""
    for attempt in range(200):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not others_alive():
            return True
        time.sleep(0.005)
    return False


def empty_tmp():
    def fix(func, path, exc):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
        except OSError:
            pass
        func(path)

    for entry in os.scandir(TMP):
        p = entry.path
        try:
            if entry.is_dir(follow_symlinks=False):
                os.chmod(p, 0o700)
                shutil.rmtree(p, onerror=fix)
            else:
                os.unlink(p)
        except FileNotFoundError:
            pass
    if os.listdir(TMP):
        fatal("cannot empty /tmp after a job")


class Out:
    """Frames for the host, written in batches: before every wait, and
    whenever a batch grows large."""

    def __init__(self):
        self.parts = []
        self.size = 0
        self.last = time.monotonic()  # when a frame last went out
        self.first = None  # when the oldest frame not yet out was added

    def add(self, kind, payload):
        if not self.parts:
            self.first = time.monotonic()
        self.parts.append(kind + U32.pack(len(payload)))
        self.parts.append(payload)
        self.size += 5 + len(payload)
        if self.size >= 1 << 16:
            self.flush()

    def due(self, now):
        """Whether the oldest pending frame has waited long enough."""
        return self.parts and now - self.first >= FLUSH_AFTER

    def record(self, gaps, rec):
        if len(rec) < 1 << 16:
            self.add(b"R", gaps + rec)
            return
        # A large record goes out at once, without another copy.
        self.flush()
        write_all(1, b"R" + U32.pack(len(gaps) + len(rec)) + gaps)
        write_all(1, rec)
        self.last = time.monotonic()

    def flush(self):
        if self.parts:
            write_all(1, b"".join(self.parts))
            self.parts = []
            self.size = 0
            self.first = None
            self.last = time.monotonic()


def run_job(job):
    jid = job["job"]
    n = int(job["n"])
    limits = job["limits"]
    if len(limits) != n:
        fatal("job %s: %d limits for %d inputs" % (jid, len(limits), n))
    first_extra = float(job["first_extra"])
    phase_limit = float(job["phase_limit"])
    wall_factor = float(job["wall_factor"])
    record_cap = int(job["record_cap"])
    byte_cap = int(job["byte_cap"])

    workdir = os.path.join(TMP, "job")
    os.mkdir(workdir, 0o700)
    rfd, wfd = os.pipe()
    efd_r, efd_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            os.close(efd_r)
            child(job, wfd, efd_w, workdir)
        finally:
            os._exit(8)
    os.close(wfd)
    os.close(efd_w)
    os.set_blocking(rfd, False)
    os.set_blocking(efd_r, False)
    # The child's CPU clock (Linux's encoding of a process CPU-time clock
    # id): readable without ptrace access, so also for a non-dumpable child.
    clock = (~pid << 3) | 2

    def cpu():
        try:
            return time.clock_gettime(clock)
        except OSError:
            return None

    out = Out()
    start = time.monotonic()
    status = None
    detail = ""
    loaded = False
    records = 0
    total = 0
    buf = bytearray()
    # Limits run from the moment the child has read its job: CPU time of
    # the child per input and for the whole list. A child that sleeps or
    # blocks uses no CPU time; it is stopped when the time it spent neither
    # running nor waiting for a CPU (wall time less the run-queue wait of
    # its main thread, from /proc/PID/schedstat) passes wall_factor times
    # the CPU limits. A child that is merely starved of CPU by a loaded host
    # is thus never stopped for it.
    schedstat = "/proc/%d/schedstat" % pid

    def rq_wait():
        try:
            with open(schedstat, "rb") as f:
                return int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    wall_last = start
    cpu_last = cpu_start = 0.0
    cpu_limit = 30.0  # to read the job
    idle_input = idle_total = 0.0  # seconds neither running nor runnable
    tick_wall, tick_wait = start, 0.0
    next_check = start + CHECK_EVERY
    stderr_keep = bytearray()
    stderr_total = 0
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    poller.register(efd_r, select.POLLIN)
    watching_stdin = False
    got_records = False

    while status is None:
        now = time.monotonic()
        if not loaded:
            if now - wall_last >= cpu_limit:
                status, detail = "setup", "the child did not read its job"
                break
        elif now >= next_check:
            next_check = now + CHECK_EVERY
            c = cpu()
            w = rq_wait()
            idle = max(0.0, (now - tick_wall) - (w - tick_wait))
            tick_wall, tick_wait = now, w
            idle_input += idle
            idle_total += idle
            if c is not None and c - cpu_last > cpu_limit:
                status = "timeout"
                detail = "input %d used more than %.2f s of CPU time" % (records, cpu_limit)
            elif c is not None and c - cpu_start > phase_limit:
                status = "timeout"
                detail = "the list used more than %.1f s of CPU time" % phase_limit
            elif idle_input >= wall_factor * cpu_limit:
                status = "timeout"
                detail = "input %d was idle (sleeping or blocked) for more than %.1f s" % (records, wall_factor * cpu_limit)
            elif idle_total >= wall_factor * phase_limit:
                status = "timeout"
                detail = "the list was idle (sleeping or blocked) for more than %.1f s" % (wall_factor * phase_limit)
            if status is not None:
                break
        until = next_check if loaded else wall_last + cpu_limit
        if now - out.last >= HEARTBEAT:
            out.add(b"P", b"")
        if out.due(now):
            out.flush()
        elif out.parts:
            until = min(until, out.first + FLUSH_AFTER)
        if got_records:
            # Let results gather: one wake-up then reads many, which costs
            # the container's CPU far less than one wake-up per result. The
            # CPU time of the few inputs run meanwhile is charged to the
            # first of them, a millisecond at most.
            got_records = False
            time.sleep(GATHER)
        events = poller.poll(max(0, int((until - now) * 1000) + 1))
        for fd, ev in events:
            if status is not None:
                break
            if fd == efd_r:
                try:
                    chunk = os.read(efd_r, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    poller.unregister(efd_r)
                    continue
                stderr_total += len(chunk)
                room = STDERR_KEEP - len(stderr_keep)
                if room > 0:
                    stderr_keep += chunk[:room]
            elif fd == 0:
                hdr = read_exact(0, 5)
                body = None
                if hdr is not None:
                    ln = U32.unpack(hdr[1:])[0]
                    body = read_exact(0, ln) if ln <= 64 else None
                if hdr is None or body is None:
                    status, detail = "hostgone", "stdin closed or broken"
                elif hdr[:1] != b"C":
                    fatal("unexpected frame %r during a job" % hdr[:1])
                elif len(body) == 4 and U32.unpack(body)[0] == jid:
                    status, detail = "cancelled", "stopped by the host"
            elif fd == rfd:
                try:
                    chunk = os.read(rfd, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    poller.unregister(rfd)
                    status = "exited"
                    detail = "the child ended after %d of %d records" % (records, n)
                    break
                total += len(chunk)
                if total > byte_cap:
                    status, detail = "toolarge", "more than %d bytes of output" % byte_cap
                    break
                buf += chunk
                while len(buf) >= 4:
                    ln = U32.unpack_from(buf, 0)[0]
                    if ln == 0 or ln > record_cap:
                        status, detail = "toolarge", "a record of %d bytes" % ln
                        break
                    if len(buf) < 4 + ln:
                        break
                    with memoryview(buf) as view:
                        rec = view[4 : 4 + ln].tobytes()
                    del buf[: 4 + ln]
                    now = time.monotonic()
                    c = cpu()
                    if c is None:
                        c = cpu_last
                    kind = rec[:1]
                    if not loaded:
                        if kind != b"L":
                            status, detail = "protocol", "the first record is not L"
                            break
                        loaded = True
                        wall_last, cpu_last, cpu_start = now, c, c
                        tick_wall, tick_wait = now, rq_wait()
                        next_check = now + CHECK_EVERY
                        cpu_limit = first_extra + (limits[0] if n else 0)
                        poller.register(0, select.POLLIN)
                        watching_stdin = True
                        if n == 0:
                            status = "done"
                            break
                        continue
                    if kind not in (b"V", b"X", b"U", b"M"):
                        status, detail = "protocol", "unknown record kind %r" % kind
                        break
                    if records >= n:
                        status, detail = "protocol", "more records than inputs"
                        break
                    if c - cpu_last > cpu_limit:
                        # A result that came too late does not count.
                        status = "timeout"
                        detail = "input %d used %.2f s of CPU time, over its limit of %.2f s" % (records, c - cpu_last, cpu_limit)
                        break
                    out.record(GAP.pack(c - cpu_last, now - wall_last), rec)
                    records += 1
                    got_records = True
                    wall_last, cpu_last, idle_input = now, c, 0.0
                    if kind != b"V":
                        status = "stopped"
                        break
                    if records == n:
                        status = "done"
                        break
                    cpu_limit = limits[records]

    elapsed = time.monotonic() - start
    if not loaded and status != "hostgone":
        detail = "%s: %s" % (status, detail)
        status = "setup"
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, wstatus = os.waitpid(pid, 0)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if watching_stdin:
        poller.unregister(0)
    os.close(rfd)
    os.close(efd_r)
    clean = sweep()
    end = {
        "job": jid,
        "status": status,
        "detail": detail,
        "records": records,
        "elapsed": elapsed,
        "exit": os.waitstatus_to_exitcode(wstatus),
        "stderr": stderr_keep.decode("utf-8", "replace"),
        "stderr_bytes": stderr_total,
        "maxrss_kb": usage.ru_maxrss,
    }
    if not clean:
        out.add(b"E", json.dumps(end).encode())
        out.flush()
        fatal("processes survived the sweep after job %s" % jid)
    empty_tmp()
    out.add(b"E", json.dumps(end).encode())
    out.flush()
    if status == "hostgone":
        os._exit(0)
    if not loaded:
        # The child did not take its program and inputs off stdin, so the
        # stream is out of step: stop, and let the host start afresh.
        fatal("job %s ended before its child read it" % jid)


# The inode of the initial PID namespace is a kernel constant
# (PROC_PID_INIT_INO).
HOST_PID_NS = "pid:[4026531836]"


def in_sandbox():
    """The supervisor kills every process it may signal after each job: it
    refuses to start but as non-root, in a PID namespace of its own, where
    the host said it runs it."""
    if os.environ.get("REPRO_SANDBOX") != "1" or os.getuid() == 0:
        return False
    try:
        return os.readlink("/proc/self/ns/pid") != HOST_PID_NS
    except OSError:
        return False


def main():
    if not in_sandbox():
        sys.stderr.write("supervisor.py runs only inside repro's sandbox\n")
        os._exit(2)
    set_nondumpable()
    os.umask(0o077)
    if os.listdir(TMP):
        empty_tmp()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    send_json(
        b"H",
        {
            "protocol": PROTOCOL,
            "python": sys.version,
            "hexversion": sys.hexversion,
            "pid": os.getpid(),
            "uid": os.getuid(),
        },
    )
    while True:
        hdr = read_exact(0, 5)
        if hdr is None:
            os._exit(0)
        kind, ln = hdr[:1], U32.unpack(hdr[1:])[0]
        if ln > 1 << 24:
            fatal("frame of %d bytes" % ln)
        body = read_exact(0, ln) if ln else b""
        if body is None:
            os._exit(0)
        if kind == b"C":
            continue  # a cancel that came after its job ended
        if kind != b"J":
            fatal("unexpected frame %r" % kind)
        try:
            job = json.loads(body)
        except ValueError:
            fatal("job header is not JSON")
        run_job(job)


if __name__ == "__main__":
    main()

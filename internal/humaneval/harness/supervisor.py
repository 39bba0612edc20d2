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
GAP = struct.Struct(">d")


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
    that a program that replaces them later changes nothing here."""
    _type = type
    _len = len
    _set = set
    _map = map
    _range = range
    _int, _bool, _float, _str, _bytes = int, bool, float, str, bytes
    _list, _tuple, _dict, _sfrozen, _complex = list, tuple, dict, frozenset, complex
    _none = type(None)
    _sha = hashlib.sha256
    _u32 = U32.pack
    _f64 = F64.pack
    _cc = struct.Struct(">dd").pack
    _array = array
    _little = sys.byteorder == "little"
    _name = type.__dict__["__name__"].__get__
    _floats = frozenset([float])
    _bytearray = bytearray
    tags = {_list: b"l", _tuple: b"t", _set: b"S", _sfrozen: b"Z"}

    def enc(v, out, size, depth):
        t = _type(v)
        if t is _none:
            out.append(b"N")
            return size + 1
        if t is _bool:
            out.append(b"T" if v else b"F")
            return size + 1
        if t is _int:
            n = (v.bit_length() + 8) // 8
            if n > MAX_INT_BYTES:
                raise Unencodable("int of %d bytes" % n)
            out.append(b"i" + _u32(n) + v.to_bytes(n, "big", signed=True))
            return _check(size + 5 + n)
        if t is _float:
            out.append(b"f" + _f64(v))
            return _check(size + 9)
        if t is _str or t is _bytes:
            b = v.encode("utf-8", "surrogatepass") if t is _str else v
            if _len(b) > HASH_THRESHOLD:
                out.append((b"h" if t is _str else b"H") + _u32(_len(b)) + _sha(b).digest())
                return _check(size + 37)
            out.append((b"s" if t is _str else b"b") + _u32(_len(b)) + b)
            return _check(size + 5 + _len(b))
        if t is _complex:
            out.append(b"c" + _cc(v.real, v.imag))
            return _check(size + 17)
        tag = tags.get(t)
        if tag is not None or t is _dict:
            if depth >= MAX_DEPTH:
                raise Unencodable("nested deeper than %d" % MAX_DEPTH)
            n = _len(v)
            if t is _dict:
                out.append(b"d" + _u32(n))
                size = _check(size + 5)
                for k, x in _list(v.items()):
                    size = enc(k, out, size, depth + 1)
                    size = enc(x, out, size, depth + 1)
                return size
            out.append(tag + _u32(n))
            size = _check(size + 5)
            if t is _list and n >= 8 and _set(_map(_type, v)) == _floats:
                size = _check(size + 9 * n)
                raw = _array("d", v)
                if _little:
                    raw.byteswap()
                raw = raw.tobytes()
                buf = _bytearray(9 * n)
                buf[0::9] = b"f" * n
                for k in _range(8):
                    buf[1 + k :: 9] = raw[k::8]
                out.append(_bytes(buf))
                return size
            for x in _list(v):
                size = enc(x, out, size, depth + 1)
            return size
        name = _name(t)
        if _type(name) is not _str:
            name = "?"
        nb = name.encode("utf-8", "replace")[:200]
        out.append(b"X" + _u32(_len(nb)) + nb)
        return _check(size + 5 + _len(nb))

    def _check(size):
        if size > cap:
            raise Unencodable("output larger than %d bytes" % cap)
        return size

    def encode(v):
        out = []
        enc(v, out, 0, 0)
        return b"".join(out)

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
    _perf = time.perf_counter
    _base = BaseException

    def emit(kind, payload):
        data = _pack(len(payload) + 1) + kind + payload
        view = memoryview(data)
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
            emit(b"X", _f64(dt) + describe(e))
            break
        dt = _perf() - t0
        try:
            data = encode(out)
        except _base as e:
            emit(b"U", _f64(dt) + describe(e))
            break
        emit(b"V", _f64(dt) + data)
    _exit(0)


# -------------------------------------------------------------- supervisor


def set_nondumpable():
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        fatal("cannot make the supervisor non-dumpable")


def others_alive():
    """Whether any process other than this one and PID 1 exists."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me):
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

    def add(self, kind, payload):
        self.parts.append(kind + U32.pack(len(payload)))
        self.parts.append(payload)
        self.size += 5 + len(payload)
        if self.size >= 1 << 16:
            self.flush()

    def flush(self):
        if self.parts:
            write_all(1, b"".join(self.parts))
            self.parts = []
            self.size = 0


def run_job(job):
    jid = job["job"]
    n = int(job["n"])
    limits = job["limits"]
    if len(limits) != n:
        fatal("job %s: %d limits for %d inputs" % (jid, len(limits), n))
    first_extra = float(job["first_extra"])
    phase_limit = float(job["phase_limit"])
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

    out = Out()
    start = time.monotonic()
    status = None
    detail = ""
    loaded = False
    records = 0
    total = 0
    buf = bytearray()
    last = start
    deadline = start + 30.0  # to read the job
    phase_end = None
    stderr_keep = bytearray()
    stderr_total = 0
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    poller.register(efd_r, select.POLLIN)
    watching_stdin = False

    while status is None:
        now = time.monotonic()
        until = deadline if phase_end is None else min(deadline, phase_end)
        if now >= until:
            if loaded:
                status = "timeout"
                detail = "no result for input %d within its time limit" % records
                if phase_end is not None and now >= phase_end:
                    detail = "the job's time limit of %.1f s passed" % phase_limit
            else:
                status, detail = "setup", "the child did not read its job"
            break
        out.flush()
        events = poller.poll(max(1, int((until - now) * 1000) + 1))
        for fd, ev in events:
            if status is not None:
                break
            if fd == efd_r:
                try:
                    chunk = os.read(efd_r, 1 << 16)
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
                    rec = bytes(buf[4 : 4 + ln])
                    del buf[: 4 + ln]
                    now = time.monotonic()
                    kind = rec[:1]
                    if not loaded:
                        if kind != b"L":
                            status, detail = "protocol", "the first record is not L"
                            break
                        loaded = True
                        last = now
                        deadline = now + first_extra + (limits[0] if n else 0)
                        phase_end = now + phase_limit
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
                    out.add(b"R", GAP.pack(now - last) + rec)
                    records += 1
                    last = now
                    if kind != b"V":
                        status = "stopped"
                        break
                    if records == n:
                        status = "done"
                        break
                    deadline = now + limits[records]

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


def in_sandbox():
    """The supervisor kills every process it may signal after each job: it
    refuses to start anywhere but in its own PID namespace, as non-root,
    where the host said it runs it."""
    if os.environ.get("REPRO_SANDBOX") != "1" or os.getuid() == 0:
        return False
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return len(line.split()) >= 3
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

"""repro's HumanEval supervisor: runs programs one after another in a sandbox.

It runs inside the evaluator container as the program user, started by the
host with `python3 -I /harness/supervisor.py`, and talks to the host over its
standard streams. It holds no expected output and judges nothing.

Three kinds of process take part, all of one uid:

  supervisor  this program: reads jobs from the host, relays records to the
              host, times and stops jobs, kills what a job left behind and
              empties /tmp. It holds the records of every job it relayed, so
              no candidate is ever forked from it; it is non-dumpable (no
              /proc/PID/mem, fd or maps for a process of its uid) and
              ptrace and process_vm_* are refused by seccomp. Under gVisor,
              which ignores dumpable for /proc/PID/fd, a job can open its
              standard streams: every frame on them is authenticated (below),
              so a job can neither forge nor replay a frame, and what it
              reads or writes there fails its own job and no other.
  zygote      `python3 -I /harness/supervisor.py zygote`, started by the
              supervisor (fork and exec: a fresh program image) before any
              job. It imports the common modules and then only forks: it
              receives three file descriptors over a socket (SCM_RIGHTS) and
              answers with the pid of the child it forked and, once that
              child ended, its exit status. It never reads a job's bytes nor a
              record. Before each fork it checks that its own resource
              limits, priority, scheduling and affinity are as they were at
              start, and stops if not (the host then starts a new container).
  child       forked by the zygote for one job: reads the job (header,
              program, then the inputs a window at a time) from its own
              pipe, runs the program's entry point on every input and
              writes each result as typed plain data to its own result
              pipe; it holds no other descriptor.

The CPU time of a job is the container's cgroup CPU usage less the
supervisor's and the zygote's own: jobs run one at a time, so this counts
every process the job starts, whatever it forks. (Under gVisor, where no
cgroup is visible inside, it is the sum over /proc, which misses a process
that nobody waits for; the host's own reading of the container's cgroup,
from just before it sends the job to the end of the job, holds the whole job
to the list's limit there too, plus a stated slack for this process's own
work for it.)
After every job the container's process table must be what it was before
it: init, the holder, the supervisor and the zygote, no zombie and no other
pid; else the job fails and the supervisor stops. The container's unix
sockets and memory charge must then be as before the first job (sockets
by type, inode and name; memory within MEMORY_SLACK); else the job's verdict
stands but the supervisor stops after it ("retired" in the E frame) and the
host starts a new container for the next job. A job that is neither
running nor runnable (every process of it sleeping or blocked) is idle; a job
idle for wall_factor times its CPU limit is stopped.

A job's limits run from the child's L record: the program's loading under the
load allowance ("first_extra") alone, up to the load mark (the child's G
record); input 0's call under its own limit from the mark, each later input's
from the previous result; and the whole job, loading included, under the
list's limit ("phase_limit"). Under gVisor the job clock counts time in which
a runnable process waited for a host CPU (gVisor's kernel advances every
running task's clock by wall-time ticks), so on a loaded host it runs fast;
there the host, which reads the container's cgroup, holds the loading and the
list to their limits, and this process applies them only at "clock_scale"
times their value, as a backstop (1 where its clock is the cgroup's). The
per-input limits are applied here as they are under every clock: a fast
clock can stop an input early, never let one run long. No input is released before the load mark, so
no input's work can run under the load allowance: a program that sends the
mark early only ends its own allowance sooner. No result may come for an
input not yet released, nor past the list's limit.

An input's call found over its limit is the job's end as a timeout, at that
moment and with that detail, whether a check found it while the call ran or
the call's end did (a result that came too late, or the child ending its
pipe): the clock is read at each, so a verdict does not depend on when this
process's checks happened to run on a loaded host. Where the header's
"overrun" is above 1 the call is not killed there: it runs on, within the
list's limit (never scaled here), to "overrun" times its own limit, and no
result of it counts (one that ended first, or that a check found only at its
end, ended within its overrun only where it used less than that).
The E frame then says how much CPU time the call used in all and whether it
was still running at that point ("past_running"). A call still running there
needed at least that many times its limit, and the host need not run its
timeout a second time.

Inputs are released to the child a window at a time: input 0 alone (at the
load mark), then each next window once every result of the one before has
come, up to WINDOW_GROWTH times larger while the last window's pace keeps it within
WINDOW_SHARE of its smallest limit (one input at a time where the job is
"exact"). A program controls when its results reach this process (it can
relay its result pipe through a thread), so the time since the previous
result is not a measure of one input: the program may have held that result
back while it ran the next input. But no input's call can start before its
window's release nor end after its result came. So each result must be
within its limit twice: by the CPU time since the previous result (over it,
the input timed out, as before) and by the CPU time since its window was
released. A result within the first but not the second ends the job
"inexact", and the host runs it again with one input per window, where the
two are the same.

Protocol (every integer big-endian; u32 = 4 bytes, u64 = 8 bytes, f64 = IEEE
binary64):

host -> supervisor, on stdin
  'K' u32 32 key            first, before the zygote or any job exists: the
                            channel key, 32 random bytes, new for each
                            container; it never leaves this process's memory
  'J' u32 len header-JSON   a job; then program bytes and inputs bytes follow,
                            which the supervisor passes to the job's child
                            through the child's own pipe
  'C' u32 job               stop job `job` if it is still running
  'S' u64 nonce             a barrier between jobs: answered with 'S' nonce
  Every frame after K ends with a 32-byte tag, HMAC-SHA256 under the key of
  b"repro-host" and the frame's bytes. A frame names its job (J by its
  header, C by its body), so a C that a job stole cannot stop another.

supervisor -> host, on stdout (each frame ends with a 32-byte tag, HMAC-SHA256
under the key of b"repro-supervisor", the frame's sequence number as u64
(H is 0) and the frame's bytes; the host takes no frame out of order)
  'H' u32 len JSON          hello, once at start, when the zygote is ready
  'R' u32 len f64 gap rec   one record of the running job's child; gap is the
                            job's CPU time since the previous record (or since
                            the child finished reading its job), measured here
  'L' u32 0                 the job's child has read its job: its program
                            runs from now (sent at once, not batched); the
                            host, which read the container's CPU usage just
                            before it sent the job and reads it again at
                            every frame and when the job ends, holds the
                            job to its limits by that clock too
  'G' u32 0                 the job's child reached its load mark (G record):
                            the load allowance ends here (sent at once, not
                            batched); the host reads the container's CPU usage
                            and holds the loading to its allowance by that
                            clock too
  'E' u32 len JSON          end of a job: status, counts, child exit, stderr,
                            "cpu" (the job's CPU time from L to the moment it
                            was decided, loading included) and "load_cpu"
                            (of it, up to the load mark); for an input
                            that ran past its limit (its overrun)
                            "past_cpu", "past_job_cpu" and "past_running";
                            "last": true when
                            the supervisor stops after it; "retired": why,
                            when the job left the container's sockets or
                            memory changed (its verdict stands)
  'P' u32 0                 heartbeat: a job is running (at least every second)
  'F' u32 len text          fatal: the supervisor stops
  'S' u32 8 nonce           the answer to the host's barrier

After a job, once every process of it is gone, the supervisor reads what is
on its stdin: only a complete, authentic C frame may be there (the host may
have sent one late). Anything else was written or broken by the job, which
then fails ("channel") and is the supervisor's last. The E frame counts the
C frames the job got ("cancels"); a host that sent one the job did not get
sends a barrier before the next job, so that no part of it is left in the
stream.

supervisor -> zygote, on a SOCK_SEQPACKET socket
  'J' + 3 fds               fork a child for the job: its job pipe (read end),
                            result pipe and stderr pipe (write ends)
zygote -> supervisor
  'Z'                       ready, once at start
  'P' u32 pid               the child's pid
  'W' i32 status i64 rss    the child ended: wait status and peak RSS (KiB)
  'S' text                  the zygote stops (its own state changed)

supervisor -> child, on the job pipe: u32 len header-JSON (the fields of the
  host's header that the child reads: CHILD_KEYS), program; then
  each window of inputs as u32 len and a JSON array of argument lists (the
  header's input_lens cut the host's array at its items)

child -> supervisor, on the result pipe: u32 len, kind byte, payload
  'L'                       job read; the program has not run yet
  'G'                       the load mark: the program has run (its code
                            executed, the entry point found) and waits for
                            input 0. Sent once, before any other record after
                            L. It ends the load allowance; input 0 is released
                            and its limit runs from here. The program can
                            write this record itself, so it is otherwise used
                            only to turn a timeout into a fail (a time limit
                            struck after it was in input 0's call, where
                            EvalPlus's per-input alarm makes the run fail;
                            before it, in loading, where only EvalPlus's
                            whole-run limit strikes, it is a timeout): forging
                            it gains nothing
  'V' f64 t value           the output for the next input; t is the child's own
                            measure of the call's CPU time (its thread's
                            clock) where the header asks for it ("times":
                            the ground truth, whose code is canonical),
                            else 0
  'X' f64 t text            the call raised
  'U' f64 t text            the output could not be encoded
  'M' text                  the program failed before the first call

Value encoding: see judge/value.go in the Go package (tags N T F i f c s h b
H l t d S Z X Y). Long str and bytes travel as length and SHA-256.
"""

import ctypes
import errno
import gc
import hashlib
import hmac
import marshal
import json
import os
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import sys
import time
from array import array

# Modules candidates commonly import, loaded once in the zygote so that a
# forked child starts with them (each child gets its own copy of their state).
import collections  # noqa: F401
import functools  # noqa: F401
import heapq  # noqa: F401
import itertools  # noqa: F401
import math  # noqa: F401
import re  # noqa: F401
import string  # noqa: F401
import typing  # noqa: F401

PROTOCOL = 9
HASH_THRESHOLD = 4096
MAX_DEPTH = 64
MAX_INT_BYTES = 1 << 20
DIGEST_ITEMS = 1 << 20  # nested items from which a list or tuple travels as a digest
DIGEST_SLICE = 8192  # outer items marshalled at once
DIGEST_MIN_OUTER = 1024  # shorter lists and tuples are never digested
TMP = "/tmp"
WORKDIR = "/tmp/job"
STDERR_KEEP = 4096
ZYGOTE_FD = 3  # the zygote's end of its socket
ZYGOTE_WAIT = 10.0  # seconds the zygote may take to answer

# How the zygote's interpreter (and so every job's, forked from it) and an
# EvalPlus driver run: isolated as -I makes them (no user site directory, no
# script directory on sys.path), but reading these variables, and no other
# PYTHON* one, from an environment set here. -I ignores the environment,
# and with it the sandbox's PYTHONHASHSEED=0: every container hashed strings
# with a seed of its own, so a program that iterates over a set of strings
# saw another order in every run, and its verdict could not be re-executed.
PYTHON_FLAGS = ["-s", "-P"]
PYTHON_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}


def python_env():
    """The environment of an interpreter this process starts: its own less
    every PYTHON* variable, plus PYTHON_ENV."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHON_ENV)
    return env

U32 = struct.Struct(">I")
U64 = struct.Struct(">Q")
F64 = struct.Struct(">d")
GAP = struct.Struct(">dd")
WAIT = struct.Struct(">iq")
CHECK_EVERY = 0.05  # seconds between CPU-time checks while waiting
HEARTBEAT = 1.0  # seconds without a frame after which a job sends a P frame
FLUSH_AFTER = 0.02  # seconds a record may wait to go out with others
GATHER = 0.001  # seconds to let results gather after reading some
CHILD_KEYS = ("job", "entry_point", "program_len", "n", "rebuild", "mem", "phase_limit", "clock_scale", "fsize", "record_cap", "times")
# The statuses of a job's running that an overrun's end may take (see
# JobRun.over_input): the job is the timeout its input's limit decided.
OVERRUN_ENDS = ("timeout", "done", "stopped", "exited", "toolarge", "protocol", "inexact")
WINDOW_MAX = 1024  # inputs released to a child at once
WINDOW_GROWTH = 8  # how much larger a window may be than the one before
WINDOW_SHARE = 1 / 16  # of the smallest limit in it, what a window may take at the pace of the last
STAT_FDS = 64  # /proc/PID/stat descriptors the gVisor clock keeps open
CLOCK_TRIES = 4  # sums over /proc the gVisor clock reads for one whole one


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def host_write(data):
    try:
        write_all(1, data)
    except OSError:
        os._exit(0)  # the host is gone


# The channel key (from the host's K frame), HMACs keyed with it and fed
# each direction's domain (copied for each frame, which costs a third of a
# new one), and the sequence number of the next frame to the host.
KEY = None
TAG = 32
HOST_DOMAIN = b"repro-host"
SUPERVISOR_DOMAIN = b"repro-supervisor"
_to_host = None
_from_host = None
_sent = 0


def set_key(key):
    global KEY, _to_host, _from_host
    KEY = key
    _to_host = hmac.new(key, SUPERVISOR_DOMAIN, "sha256")
    _from_host = hmac.new(key, HOST_DOMAIN, "sha256")


def signer(head):
    """An HMAC of the next frame to the host, fed its head (kind and
    length); the caller adds the payload and appends the digest."""
    global _sent
    mac = _to_host.copy()
    mac.update(U64.pack(_sent) + head)
    _sent += 1
    return mac


def framed(kind, payload):
    """The frame for the host, tag included."""
    head = kind + U32.pack(len(payload))
    mac = signer(head)
    mac.update(payload)
    return head + payload + mac.digest()


def send(kind, payload):
    if KEY is None:
        # Before the key came (no job exists yet) only a fatal frame can be
        # sent; its tag is zeros, and the host reports its text as the
        # supervisor's failure to start.
        host_write(kind + U32.pack(len(payload)) + payload + bytes(TAG))
        return
    host_write(framed(kind, payload))


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


class Forged(Exception):
    """Bytes on stdin that are no frame of the host's."""


MAX_HEADER = 1 << 20  # bytes of a job header (protocol.go: maxJobHeader)
MAX_JOB_BYTES = 1 << 30
C_FRAME = 1 + 4 + 4 + TAG


class HostIn:
    """The host's frames on stdin, each checked against its tag before it
    is used. Bytes are gathered in buf; frame() returns the next complete
    frame, None while it is incomplete, and raises Forged for bytes the host
    did not send."""

    def __init__(self):
        self.buf = bytearray()

    def fill(self):
        """Reads what stdin holds (at least one byte, blocking if it holds
        none); False at its end."""
        try:
            b = os.read(0, 1 << 16)
        except OSError:
            return False
        if not b:
            return False
        self.buf += b
        return True

    def size(self):
        """The length of the frame at the head of buf, or None if buf does
        not yet hold enough of it to tell."""
        b = self.buf
        if len(b) < 5:
            return None
        kind, n = b[:1], U32.unpack_from(b, 1)[0]
        if kind == b"C":
            if n != 4:
                raise Forged("a C frame of %d bytes" % n)
            return C_FRAME
        if kind == b"S":
            if n != 8:
                raise Forged("an S frame of %d bytes" % n)
            return 5 + 8 + TAG
        if kind != b"J":
            raise Forged("a frame of kind %r" % bytes(kind))
        if n > MAX_HEADER:
            raise Forged("a job header of %d bytes" % n)
        if len(b) < 5 + n:
            return None
        try:
            h = json.loads(bytes(b[5 : 5 + n]))
            body = int(h["program_len"]) + int(h["inputs_len"])
        except (ValueError, TypeError, KeyError):
            raise Forged("a job header that is not a job's")
        if not 0 <= body <= MAX_JOB_BYTES:
            raise Forged("a job of %d bytes" % body)
        return 5 + n + body + TAG

    def frame(self):
        """The next frame as (kind, body, n), where body is what follows
        the u32 n (for a J, its n bytes of header, then the program and the
        inputs); None while it is incomplete."""
        total = self.size()
        if total is None or len(self.buf) < total:
            return None
        with memoryview(self.buf) as view:
            mac = _from_host.copy()
            mac.update(view[: total - TAG])
            ok = hmac.compare_digest(mac.digest(), view[total - TAG : total])
            frame = view[: total - TAG].tobytes()
        del self.buf[:total]
        if not ok:
            raise Forged("a %r frame whose tag does not match" % frame[:1])
        return frame[:1], frame[5:], U32.unpack_from(frame, 1)[0]

    def prefix_of_c(self):
        """Whether buf could still become one C frame: the start of one
        that the host sent but that has not all arrived yet."""
        b = self.buf
        if len(b) >= C_FRAME or b[:1] != b"C":
            return False
        return len(b) < 5 or U32.unpack_from(b, 1)[0] == 4

    def next(self):
        """Blocks for the next frame; None at the end of stdin."""
        while True:
            f = self.frame()
            if f is not None:
                return f
            if not self.fill():
                return None


HOST = HostIn()

# How long the supervisor waits after a job for the rest of a C frame that
# has begun to arrive.
LATE_CANCEL_WAIT = 2.0


def cancels_for(jid):
    """Takes every complete frame gathered from stdin, during a job or right
    after it, when only C frames may come; returns how many stop job jid.
    Raises Forged for any other frame."""
    n = 0
    while True:
        f = HOST.frame()
        if f is None:
            return n
        kind, body, _ = f
        if kind != b"C":
            raise Forged("a %r frame during a job" % kind)
        if U32.unpack(body)[0] == jid:
            n += 1


def channel_broken(e):
    """The status and detail of a job whose processes broke the channel."""
    return "channel", "the supervisor's standard input holds %s: a process of the job wrote into it or read from it" % e


def drain_stdin(jid):
    """After a job, once no process of it is left: the C frames the host
    sent late for it (their number), or Forged if stdin holds anything
    else."""
    cancels = 0
    deadline = time.monotonic() + LATE_CANCEL_WAIT
    while True:
        cancels += cancels_for(jid)
        wait = 0.0
        if HOST.buf:
            if not HOST.prefix_of_c():
                raise Forged("%d bytes that are no frame" % len(HOST.buf))
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise Forged("%d bytes of a frame that never ended" % len(HOST.buf))
        r, _, _ = select.select([0], [], [], wait)
        if not r:
            if not HOST.buf:
                return cancels
            continue
        if not HOST.fill():
            if HOST.buf:
                raise Forged("%d bytes before the end of stdin" % len(HOST.buf))
            return cancels


# ---------------------------------------------------------------- encoding


class Unencodable(Exception):
    pass


def make_encoder(cap):
    """Returns encode(v) -> bytes, bound to the builtins as they are now, so
    that a program that replaces them later changes nothing here. Only the
    exact builtin types are encoded as themselves. A subclass of one of
    them, a numpy scalar or array, an iterator or a dict view travels as a
    'Y' value: its type's name and what Python's comparison makes of it,
    read through the base type's own slots (or numpy's own C methods),
    never through a method the object's class can override. Any other
    object becomes an "other" marker with its type's name."""
    _type = type
    _len = len
    _map = map
    _range = range
    _enumerate = enumerate
    _min, _max = min, max
    _int, _bool, _float, _str, _bytes = int, bool, float, str, bytes
    _list, _tuple, _dict, _set, _frozenset, _complex = list, tuple, dict, set, frozenset, complex
    _none = type(None)
    # collections.Counter (the canonical output of Mbpp/88) travels as the
    # dict it is, read through dict's own methods, never its own.
    _counter = collections.Counter
    _dict_items = dict.items
    _dict_len = dict.__len__
    _sha = hashlib.sha256
    _u32 = U32.pack
    _f64 = F64.pack
    _cc = struct.Struct(">dd").pack
    _array = array
    _little = sys.byteorder == "little"
    _name = type.__dict__["__name__"].__get__
    _imin, _imax = -(1 << 63), (1 << 63) - 1
    # 'Y' values: what a non-builtin type is to EvalPlus's comparison.
    _issub = type.__subclasscheck__
    _module = type.__dict__["__module__"].__get__
    _flags = type.__dict__["__flags__"].__get__
    _heap = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by Python code
    _real = complex.__dict__["real"].__get__
    _imag = complex.__dict__["imag"].__get__
    _bases = (
        (_int, _int.__int__),
        (_float, _float.__float__),
        (_complex, lambda v: _complex(_real(v), _imag(v))),
        (_str, _str.__str__),
        (_bytes, lambda v: _bytes.__getitem__(v, _slice(None))),
        (_list, lambda v: _list(_list.__iter__(v))),
        (_tuple, lambda v: _tuple(_tuple.__iter__(v))),
        (_set, lambda v: _set(_set.__iter__(v))),
        (_frozenset, lambda v: _frozenset(_frozenset.__iter__(v))),
    )
    _d = {1: 2}
    # Iterators and views: EvalPlus's == compares them by identity (or, for
    # keys and items views, as sets), and set(out) iterates them.
    _iterators = _frozenset([_type(x) for x in (
        (x for x in ()), filter(None, ()), map(abs, ()), zip(), _enumerate(()), reversed(()),
        iter([]), iter(()), iter(_set()), iter(""), iter(b""), iter(_range(0)), iter(_d),
        iter(_d.values()), iter(_d.items()), _range(0), _d.values())])
    _views = _frozenset([_type(_d.keys()), _type(_d.items())])
    _hasattr, _slice = hasattr, slice
    # UserDict, UserList and UserString compare as the builtin value they
    # hold in their data attribute, read from the instance's own dict.
    _users = ((collections.UserDict, _dict), (collections.UserList, _list), (collections.UserString, _str))
    _vars = object.__getattribute__
    MAX_ITEMS = 1 << 20
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
        elif t is _dict or t is _counter:
            if depth >= MAX_DEPTH:
                raise Unencodable("nested deeper than %d" % MAX_DEPTH)
            out += b"d"
            out += _u32(_dict_len(v))
            for k, x in _list(_dict_items(v)):
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
            mode, inner = wrapped(v, t)
            if mode is not None:
                if depth >= MAX_DEPTH:
                    raise Unencodable("nested deeper than %d" % MAX_DEPTH)
                if mode == b"b" and _module(t) == "numpy":
                    name = "numpy." + name
                nb = name.encode("utf-8", "replace")[:200]
                out += b"Y"
                out += mode
                out += _u32(_len(nb))
                out += nb
                enc(inner, out, depth + 1)
            else:
                nb = name.encode("utf-8", "replace")[:200]
                out += b"X"
                out += _u32(_len(nb))
                out += nb
        if _len(out) > cap:
            raise Unencodable("output larger than %d bytes" % cap)

    def drain(it):
        # The items of an iterator, as many as set(out) would take.
        got = []
        for x in it:
            got.append(x)
            if _len(got) > MAX_ITEMS:
                raise Unencodable("an iterator of more than %d items" % MAX_ITEMS)
        return got

    def wrapped(v, t):
        # (mode, plain value) for a 'Y' value, or (None, None): mode b is a
        # value compared as its base type's value, i an object equal only
        # to itself whose items set() takes, v a keys or items view, equal
        # to a set of the same items.
        if t in _iterators:
            return b"i", drain(v)
        if t in _views:
            return b"v", drain(v)
        if _module(t) == "numpy" and not _flags(t) & _heap:
            # numpy's own C types (a class written in Python is a heap
            # type): a scalar is its Python value, an array its items.
            if _name(t) == "ndarray":
                x = t.tolist(v)
                return (b"i", x) if _type(x) is _list else (b"b", x)
            if not _hasattr(t, "item"):
                return None, None
            x = t.item(v)
            if _type(x) in (_int, _float, _bool, _complex, _str, _bytes):
                return b"b", x
            return None, None
        for base, read in _bases:
            if _issub(base, t):
                return b"b", read(v)
        if _issub(_dict, t):
            # a dict subclass, as dict's own methods see it
            return b"b", _dict(_list(_dict_items(v)))
        for user, base in _users:
            if _issub(user, t):
                data = _dict.get(_vars(v, "__dict__"), "data")
                if _issub(base, _type(data)):
                    return b"b", data if _type(data) is base else wrapped(data, _type(data))[1]
        return None, None

    _marshal = marshal.dumps
    _set = set
    _sum = sum
    seqs = _frozenset((_list, _tuple))
    D_HEAD = struct.Struct(">cIQ")

    def digest(v):
        # A list or tuple of lists and tuples with DIGEST_ITEMS items or more
        # in all (Mbpp/255's 1.66 M tuples of 77 str) travels as its item
        # count, the length and the SHA-256 of its marshal (version 2)
        # bytes, made and hashed a slice at a time: marshal takes exact
        # builtin types only and writes no references, so equal digests
        # mean equal values of the same types.
        h = _sha()
        size = 0
        for i in _range(0, _len(v), DIGEST_SLICE):
            b = _marshal(v[i : i + DIGEST_SLICE], 2)
            size += _len(b)
            h.update(b)
        return bytearray(b"D" + D_HEAD.pack(b"l" if _type(v) is _list else b"t", _len(v), size) + h.digest())

    def encode(v):
        t = _type(v)
        if (t is _list or t is _tuple) and _len(v) >= DIGEST_MIN_OUTER:
            if _set(_map(_type, v)) <= seqs and _sum(_map(_len, v)) >= DIGEST_ITEMS:
                try:
                    return digest(v)
                except ValueError as e:
                    raise Unencodable("a large output holds an object of a type marshal refuses: %s" % e)
        out = bytearray()
        enc(v, out, 0)
        return out

    return encode


# ------------------------------------------------------------------- child


def _tuples(items):
    return [tuple(x) for x in items]


def _deep_tuple(v):
    if type(v) is list:
        return tuple(_deep_tuple(x) for x in v)
    return v


# The rebuilds of JSON inputs that EvalPlus applies to MBPP+ tasks (the host
# names one per job, see judge/rules.go): JSON holds no tuples, sets or complex
# numbers. Each maps one argument list to the arguments of the call.
REBUILD = {
    "tuple_args": lambda a: [tuple(x) for x in a],
    "tuple_items_of_args": lambda a: [_tuples(x) for x in a],
    "tuple_items_of_first": lambda a: [_tuples(a[0]), a[1]],
    "tuple_second": lambda a: [a[0], tuple(a[1])],
    "sets_of_first": lambda a: [[set(x) if isinstance(x, list) and len(x) else {} for x in a[0]]],
    "float_complex": lambda a: (float(a[0]), complex(a[1])),
    "tuple_first": lambda a: [tuple(a[0]), a[1]],
    "tuple_items_then_tuple_args": lambda a: [tuple(_tuples(x)) for x in a],
    "tuple_first_with_tuple_items": lambda a: [tuple(tuple(x) if isinstance(x, list) else x for x in a[0])],
    "tuple_first_of_three": lambda a: [tuple(a[0]), a[1], a[2]],
    "dict_values_tuples": lambda a: [{k: tuple(x) for k, x in a[0].items()}] + a[1:],
    "complex_first": lambda a: [complex(a[0])],
    "deep_tuples": _deep_tuple,
}


def describe(e):
    try:
        text = "%s: %s" % (type(e).__name__, str(e))
    except BaseException:
        text = type(e).__name__
    return text.encode("utf-8", "replace")[:1000]



def _no_time():
    return 0.0


def child(jfd, rfd, efd):
    """Runs in a child of the zygote. Everything before exec of the program is
    trusted; after it, the program controls this process."""
    try:
        os.setsid()
        os.nice(10)  # the supervisor keeps the upper hand within the container
        head = read_exact(jfd, 4)
        size = U32.unpack(head)[0] if head is not None else 1 << 30
        if size > 1 << 24:
            os._exit(5)
        job = json.loads(read_exact(jfd, size))
        if job.get("kind") == "evalplus":
            evalplus_child(job, jfd, rfd, efd)  # execs; never returns
        mem = int(job["mem"])
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(float(job["phase_limit"]) * float(job["clock_scale"])) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        fsize = int(job["fsize"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        program = read_exact(jfd, int(job["program_len"]))
        if program is None:
            os._exit(5)
        n = int(job["n"])
        # The zygote's socket and everything else go: the program holds
        # /dev/null, its stderr pipe, its result pipe and the read end of
        # its job pipe, on which the supervisor releases the inputs a
        # window at a time (see run_job).
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(efd, 1)
        os.dup2(efd, 2)
        os.dup2(rfd, 3)
        os.dup2(jfd, 4)
        os.closerange(5, 1 << 16)
        jfd = 4
        os.chdir(WORKDIR)
    except BaseException:
        os._exit(6)

    _exit = os._exit
    _write = os.write
    _pack = U32.pack
    _f64 = F64.pack
    # Only the ground truth keeps the call's own time; elsewhere the
    # supervisor's clock alone judges, and under gVisor each read of a
    # CPU clock is a system call, two per input. The thread's clock, not
    # the process's: under RLIMIT_CPU Linux reads the process clock from a
    # group timer brought up to date only at ticks, so a short call would
    # measure 0 or a whole tick. Canonical code runs in this thread; CPU it
    # spends elsewhere shows in the supervisor's measure of the input.
    _perf = time.thread_time if job.get("times") else _no_time
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

    _read = read_exact
    _loads = json.loads
    _unpack = U32.unpack

    def window():
        # The next window of inputs, once the supervisor releases it.
        head = _read(jfd, 4)
        if head is None:
            _exit(7)
        blob = _read(jfd, _unpack(head)[0])
        if blob is None:
            _exit(7)
        args = _loads(blob)
        if rebuild:
            args = [REBUILD[rebuild](a) for a in args]
        return args

    try:
        emit(b"L", b"")
        program = program.decode("utf-8")
        rebuild = job.get("rebuild")
        if rebuild:
            REBUILD[rebuild]  # an unknown rebuild fails here, before the program runs
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
    try:
        emit(b"G", b"")
    except _base:
        _exit(7)

    done = 0
    while done < n:
        try:
            args_list = window()
        except _base:
            _exit(7)
        done += len(args_list)
        for args in args_list:
            t0 = _perf()
            try:
                out = fn(*args)
            except _base as e:
                dt = _perf() - t0
                emit(b"X", _f64(dt), describe(e))
                _exit(0)
            dt = _perf() - t0
            try:
                data = encode(out)
            except _base as e:
                emit(b"U", _f64(dt), describe(e))
                _exit(0)
            emit(b"V", _f64(dt), data)
    _exit(0)

def evalplus_child(job, jfd, rfd, efd):
    """The child of an EvalPlus job (see run_evalplus_job): it becomes
    EvalPlus's driver, a fresh program image, with the rest of its job pipe
    (the sample, then the task's dataset line) as fd 4, its result pipe as
    fd 3, its stderr pipe as fd 2 and /dev/null as 0 and 1."""
    fsize = int(job["fsize"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(efd, 2)
    os.dup2(rfd, 3)
    os.dup2(jfd, 4)
    os.closerange(5, 1 << 16)
    os.chdir(WORKDIR)
    if EVALPLUS_DRIVER is not None:
        # The driver and its modules were loaded by the zygote: this
        # process, forked from it for this job alone, is the driver.
        code = 2
        try:
            code = EVALPLUS_DRIVER.run(job)
        finally:
            os._exit(code or 0)
    os.execve(sys.executable, [sys.executable] + PYTHON_FLAGS + [EVALPLUS_DRIVER_PATH, "job", json.dumps(job, separators=(",", ":"))], python_env())


EVALPLUS_DRIVER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evalplus_driver.py")
EVALPLUS_DRIVER = None  # evalplus_driver.py, loaded by the zygote of an EvalPlus container


def preload_evalplus():
    """In the zygote of an --engine evalplus container (the host sets
    REPRO_EVALPLUS_TREE): loads evalplus_driver.py and the modules it
    imports once, before any job, so that each job's driver, a child forked
    from the zygote, does not load numpy and EvalPlus again. Loading runs
    none of EvalPlus's functions; where it fails, each job's child execs the
    driver instead, which reports what is missing."""
    global EVALPLUS_DRIVER
    if not os.environ.get("REPRO_EVALPLUS_TREE"):
        return
    import importlib.util

    try:
        spec = importlib.util.spec_from_file_location("evalplus_driver", EVALPLUS_DRIVER_PATH)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        missing = mod.preload()
    except Exception:
        return
    if not missing:
        mod.PRELOADED = missing
        EVALPLUS_DRIVER = mod


# ------------------------------------------------------------------ zygote


def set_nondumpable(who):
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        fatal("cannot make the %s non-dumpable" % who)


IOPRIO_GET = {"x86_64": 252, "aarch64": 31}


def own_state():
    """What a job must not be able to change in the zygote: every resource
    limit, the priority, the scheduling policy and parameter, the CPU
    affinity and the I/O priority."""
    limits = tuple(resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource)) if n.startswith("RLIMIT_"))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    io = libc.syscall(IOPRIO_GET.get(os.uname().machine, -1), 1, 0)
    return (
        limits,
        os.getpriority(os.PRIO_PROCESS, 0),
        os.sched_getscheduler(0),
        os.sched_getparam(0).sched_priority,
        tuple(sorted(os.sched_getaffinity(0))),
        io,
    )


def zygote():
    """The zygote's loop (see the module comment). It exits when the
    supervisor's end of the socket closes, or when its own state changed."""
    set_nondumpable("zygote")
    os.umask(0o077)
    preload_evalplus()
    # What the zygote holds goes to the collector's permanent generation: a
    # child's full collections never walk it, so they write none of its
    # pages (each such write a copy-on-write fault after the fork; about 3
    # to 5 ms less for a job that keeps 100,000 tuples, under runc).
    gc.collect()
    gc.freeze()
    sock = socket.socket(fileno=ZYGOTE_FD)
    start = own_state()
    sock.send(b"Z")
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 3)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        if msg != b"J" or len(fds) != 3:
            os._exit(11)
        if own_state() != start:
            try:
                sock.send(b"S" + ("limits or scheduling changed: %r, not %r" % (own_state(), start)).encode()[:4000])
            finally:
                os._exit(10)
        pid = os.fork()
        if pid == 0:
            try:
                child(*fds)
            finally:
                os._exit(8)
        for fd in fds:
            os.close(fd)
        sock.send(b"P" + U32.pack(pid))
        # Every child is reaped, not only the job's: no zombie of the
        # zygote outlives the job (seccomp refuses CLONE_PARENT, so the
        # job's child is the only one there can be).
        while True:
            wpid, status, usage = os.wait4(-1, 0)
            if wpid == pid:
                break
        try:
            while os.wait4(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        sock.send(b"W" + WAIT.pack(status, usage.ru_maxrss))


def describe_wait(status):
    """A wait status in words: "exit status N" or "killed by signal N"."""
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    return "exit status %d" % os.waitstatus_to_exitcode(status)


class Zygote:
    """The supervisor's handle of its zygote."""

    def __init__(self):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            # A fresh program image at once: nothing of this process's
            # memory reaches the zygote.
            try:
                os.dup2(theirs.fileno(), ZYGOTE_FD)
                os.set_inheritable(ZYGOTE_FD, True)
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(ZYGOTE_FD + 1, 1 << 16)
                os.execve(sys.executable, [sys.executable] + PYTHON_FLAGS + [os.path.abspath(__file__), "zygote"], python_env())
            finally:
                os._exit(9)
        theirs.close()
        self.sock, self.pid = mine, pid
        self.clock = (~pid << 3) | 2  # its CPU clock, as for any process
        t0 = time.monotonic()
        msg = self.recv()
        if msg != b"Z":
            # Whether it ended (and how) or stayed silent: its own output
            # goes nowhere. A zygote whose socket closed is ending: its
            # exit shows a moment later.
            wpid, status = 0, 0
            deadline = time.monotonic() + 1.0
            while True:
                try:
                    wpid, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if wpid or time.monotonic() >= deadline:
                    break
                time.sleep(0.01)
            how = "it ended, %s" % describe_wait(status) if wpid == pid else "it is still running"
            fatal("the zygote did not start: it sent %r after %.1f s, and %s" % (msg, time.monotonic() - t0, how))

    def recv(self, timeout=30.0):
        """The zygote's next message, or None if it ended or stayed silent."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return None
        try:
            return self.sock.recv(4096) or None
        except OSError:
            return None

    def cpu(self):
        try:
            return time.clock_gettime(self.clock)
        except OSError:
            return 0.0

    def fork(self, fds):
        """Has the zygote fork a child holding fds; returns (pid, None) or
        (None, why)."""
        try:
            socket.send_fds(self.sock, [b"J"], fds)
        except OSError as e:
            return None, "cannot reach the zygote: %s" % e
        msg = self.recv(ZYGOTE_WAIT)
        if msg is None:
            return None, "the zygote ended or did not answer"
        if msg[:1] == b"S":
            return None, "the zygote stopped: " + msg[1:].decode("utf-8", "replace")
        if msg[:1] != b"P" or len(msg) != 5:
            return None, "the zygote answered %r" % msg[:1]
        return U32.unpack(msg[1:])[0], None

    def reap(self):
        """Returns the wait status and peak RSS of the zygote's child, or
        None if the zygote is gone, broken or was stopped (it is woken, but
        the job that stopped it fails)."""
        st = proc_state(str(self.pid))
        # A stop that a process of the job queued but the zygote has not
        # acted on yet (on a loaded host it may not have run since) shows
        # only as pending, and the SIGCONT below would discard it unseen.
        # Every process of the job is gone by now, so no kill of theirs is
        # still on its way.
        pending = stop_pending(self.pid)
        try:
            os.kill(self.pid, signal.SIGCONT)
        except OSError:
            return None
        if st is None or st[0] not in (b"S", b"R", b"D") or pending:
            return None
        msg = self.recv(ZYGOTE_WAIT)
        if msg is None or msg[:1] != b"W" or len(msg) != 1 + WAIT.size:
            return None
        if os.waitpid(self.pid, os.WNOHANG) != (0, 0):
            return None
        return WAIT.unpack(msg[1:])


# -------------------------------------------------------------- supervisor

# Where the container's CPU usage is: cgroup v1 (nanoseconds), then v2
# (usage_usec in cpu.stat). The container has a cgroup namespace of its own,
# so its cgroup is the root of what it sees.
CGROUP_CPU = (
    ("/sys/fs/cgroup/cpuacct/cpuacct.usage", 1e-9, None),
    ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", 1e-9, None),
    ("/sys/fs/cgroup/cpu.stat", 1e-6, b"usage_usec"),
)


class JobClock:
    """The CPU time of the running job: the container's cgroup CPU usage
    less the supervisor's and the zygote's own CPU time. Only deltas mean
    anything."""

    def __init__(self, zyg):
        self.zyg = zyg
        self.resolution = 0.0  # seconds a reading may lag the time used
        self.kind = "cgroup"  # or "proc" (gVisor's clock of ticks)
        if os.environ.get("REPRO_CPU_CLOCK") == "proc":
            # Under gVisor the container's cgroup is not visible inside;
            # gVisor's kernel holds every process of the sandbox, so the
            # sum over /proc of each process's own and reaped children's
            # CPU time (init reaps orphans) counts all the job started.
            self.kind = "proc"
            self.tick = 1.0 / os.sysconf("SC_CLK_TCK")
            self.resolution = self.tick
            self.fds = {}
            self.usage = self.proc_usage
            self.usage()
            return
        for path, scale, key in CGROUP_CPU:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            self.fd, self.scale, self.key = fd, scale, key
            try:
                self.usage()
            except (OSError, ValueError):
                os.close(fd)
                continue
            return
        fatal("the container's CPU usage is not readable (no cgroup cpuacct.usage or cpu.stat)")

    def proc_stat(self, name):
        """/proc/NAME/stat now, read through a kept descriptor: under gVisor
        an open costs ten preads. A descriptor whose process is gone reads
        as pid 0 there, so it is dropped and the file opened again; past
        STAT_FDS kept ones, the file is opened for this read only."""
        head = name.encode() + b" ("
        fd = self.fds.get(name)
        if fd is not None:
            try:
                s = os.pread(fd, 4096, 0)
                if s.startswith(head):
                    return s
            except OSError:
                pass
            os.close(self.fds.pop(name))
        try:
            fd = os.open("/proc/%s/stat" % name, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            s = os.pread(fd, 4096, 0)
        except OSError:
            s = None
        if s is None or not s.startswith(head) or len(self.fds) >= STAT_FDS:
            os.close(fd)
            return s
        self.fds[name] = fd
        return s

    def proc_usage(self):
        """The sum over /proc, each process counted once. The sum is not
        read at one instant: a process reaped while it is read moves its
        time into its parent's reaped-children counts, and a sum that read
        the parent before and the child after would count it in neither
        (a reading that falls by the child's whole time). So processes are
        read parents first (by pid: gVisor numbers them in the order they
        start, and an orphan's new parent is init), and the sum is read
        again whenever a process listed for it was gone before its line
        was read. A job that forks and reaps without pause could keep
        every sum from being whole: after CLOCK_TRIES the largest stands
        (a miss only ever lowers one)."""
        best = 0
        for _ in range(CLOCK_TRIES):
            total, whole = self.proc_sum()
            if whole:
                return total
            best = max(best, total)
        return best

    def proc_sum(self):
        """One sum over /proc in pid order: (seconds, whole), whole when
        every process listed was still there when its line was read."""
        total, whole = 0, True
        names = sorted((n for n in os.listdir("/proc") if n.isdigit()), key=int)
        for name in names:
            s = self.proc_stat(name)
            if s is None:
                whole = False
                continue
            try:
                fields = s[s.rindex(b")") + 2 :].split()
                total += sum(int(v) for v in fields[11:15])
            except (ValueError, IndexError):
                continue
        live = set(names)
        for name in [n for n in self.fds if n not in live]:
            os.close(self.fds.pop(name))
        return total * self.tick, whole

    def usage(self):
        raw = os.pread(self.fd, 4096, 0)
        if self.key is None:
            return int(raw) * self.scale
        for line in raw.split(b"\n"):
            k, _, v = line.partition(b" ")
            if k == self.key:
                return int(v) * self.scale
        raise ValueError("no %r" % self.key)

    def __call__(self):
        return self.usage() - time.process_time() - self.zyg.cpu()


# The signals that stop a process, as bits of /proc/PID/status's masks.
STOP_SIGNALS = 0
for _sig in (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
    STOP_SIGNALS |= 1 << (_sig - 1)


def stop_pending(pid):
    """Whether a stop signal is pending for pid, to the process (ShdPnd) or
    its main thread (SigPnd); a status file without the masks (or none)
    reads as none pending, and one whose masks do not parse as pending."""
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return False
    for line in data.split(b"\n"):
        if line.startswith((b"SigPnd:", b"ShdPnd:")):
            try:
                if int(line.split()[1], 16) & STOP_SIGNALS:
                    return True
            except (IndexError, ValueError):
                return True
    return False


def proc_state(name):
    """The state letter and thread count of /proc/<name>, or None."""
    try:
        with open("/proc/%s/stat" % name, "rb") as f:
            s = f.read()
        fields = s[s.rindex(b")") + 2 :].split()
        return fields[0], int(fields[17])
    except (OSError, ValueError, IndexError):
        return None


def job_runnable(skip):
    """Whether any process or thread of the container, other than init and
    those in skip, is running or waiting for a CPU right now."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1" or int(name) in skip:
            continue
        st = proc_state(name)
        if st is None:
            continue
        if st[0] == b"R":
            return True
        if st[1] > 1:
            try:
                tids = os.listdir("/proc/%s/task" % name)
            except OSError:
                continue
            for tid in tids:
                t = proc_state("%s/task/%s" % (name, tid))
                if t is not None and t[0] == b"R":
                    return True
    return False


SWEEP_FIRST_WAIT = 0.0001  # seconds before a sweep's second look, doubled each time
SWEEP_WAIT = 0.002  # seconds between a sweep's later looks


def sweep(skip):
    """Kills every live process of this user but those in skip, until none
    is left. Returns False if some survived. (A non-dumpable process's /proc
    folder belongs to root, so those are candidates too; a process that
    refuses the signal is not ours.)"""
    uid = os.getuid()
    foreign = set(skip)
    for attempt in range(200):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or name == "1" or int(name) in foreign:
                continue
            try:
                owner = os.stat("/proc/" + name).st_uid
            except OSError:
                continue
            if owner not in (uid, 0):
                continue
            st = proc_state(name)
            if st is None:
                continue
            if st[0] == b"Z":
                # A zombie, or a process whose first thread exited while its
                # other threads run on (its state is the first thread's):
                # the signal ends the latter and does nothing to the former,
                # which its parent reaps (see leftovers).
                try:
                    os.kill(int(name), signal.SIGKILL)
                except OSError:
                    pass
                continue
            found = True
            try:
                os.kill(int(name), signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:
                foreign.add(int(name))
        if not found:
            return True
        # A killed process takes a moment to die: look again soon, then
        # every SWEEP_WAIT (about 0.4 s in all before giving up).
        time.sleep(min(SWEEP_WAIT, SWEEP_FIRST_WAIT * (1 << min(attempt, 5))))
    return False


def process_table():
    """Every pid of the container, whatever its state (zombies included)."""
    return frozenset(int(n) for n in os.listdir("/proc") if n.isdigit())


# The container's processes between jobs: init, the holder, the supervisor
# and the zygote (set in main).
BASELINE = frozenset()
SETTLE_WAIT = 5.0  # seconds for the processes a sweep killed to be reaped
# Seconds the container may take, once the supervisor runs, to hold only
# init, the holder and the supervisor: the engine starts the supervisor
# as soon as init runs, and on a loaded host init may not have started
# the holder yet (its child, a copy of init until it runs the holder's
# program, counts as the holder).
HOLDER_WAIT = 10.0


def table_until(settled, wait, longest):
    """The container's process table once settled(table) holds, or as it is
    after wait seconds. It looks again after SWEEP_FIRST_WAIT, doubled each
    time up to longest: under gVisor a reaped child often still shows at
    the first look."""
    deadline = time.monotonic() + wait
    pause = SWEEP_FIRST_WAIT
    while True:
        now = process_table()
        if settled(now) or time.monotonic() >= deadline:
            return now
        time.sleep(pause)
        pause = min(longest, pause * 2)


def leftovers():
    """After a job's processes were killed: the pids by which the
    container's process table differs from BASELINE once init and the
    zygote had SETTLE_WAIT to reap what was killed, or an empty set. (A
    killed process stays as a zombie until its parent reaps it.)"""
    return table_until(lambda now: now == BASELINE, SETTLE_WAIT, SWEEP_WAIT) ^ BASELINE


def wait_for_holder():
    """Returns once the container holds init, one other process (the
    holder) and the supervisor; stops the supervisor if it still holds
    anything else after HOLDER_WAIT seconds."""
    me = os.getpid()

    def settled(now):
        return len(now) == 3 and {1, me} <= now

    now = table_until(settled, HOLDER_WAIT, 0.05)
    if not settled(now):
        fatal(
            "after %.0f s the container holds other processes than init, the holder and the supervisor (%d): %s"
            % (HOLDER_WAIT, me, describe_pids(now))
        )


# How far the container's memory charge may be above its charge before the
# first job once a job's processes are gone (see memory_charge). Honest jobs
# leave a few MiB at most (kernel objects the reading still counts, the
# zygote's and init's pages touched again); 32 MiB is 1/16 of the
# container's 512 MiB, so a container that passed the check still holds
# what any sample of the datasets needs.
MEMORY_SLACK = 32 << 20
# At most this many bytes of /proc/net/unix are read; a longer table is
# itself a change (the container's own sockets take a few lines).
UNIX_TABLE_CAP = 4 << 20
# The container's state before the first job (set in main): its unix
# sockets and its memory charge.
SOCKETS = frozenset()
CHARGE = 0


class KeptFile:
    """A kernel's file (in /proc or the cgroup) read whole, as it is at each
    read, through a descriptor kept open: under gVisor an open and close of
    /proc/net/unix or /proc/self/status costs 0.6 to 1.4 ms, a pread 75 to
    83 µs (both read again at every pread from offset 0, under Linux and
    gVisor alike)."""

    def __init__(self, path):
        self.path, self.fd = path, None

    def read(self, n):
        """At most n bytes of the file; raises OSError where it cannot be
        opened or read."""
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        parts, size = [], 0
        while size < n:
            b = os.pread(self.fd, min(1 << 16, n - size), size)
            if not b:
                break
            parts.append(b)
            size += len(b)
        return b"".join(parts)


KEPT = {}  # path: KeptFile, of the container state's files


def read_kept(path, n):
    """At most n bytes of the file at path, through its KeptFile."""
    f = KEPT.get(path)
    if f is None:
        f = KEPT[path] = KeptFile(path)
    return f.read(n)


def unix_sockets():
    """The unix sockets of the container's network namespace as
    /proc/net/unix lists them, each by its type, inode and name (its
    reference count, flags and state change while it is in use), or None
    when the table is unreadable or over UNIX_TABLE_CAP."""
    try:
        data = read_kept("/proc/net/unix", UNIX_TABLE_CAP + 1)
    except OSError:
        return None
    if len(data) > UNIX_TABLE_CAP:
        return None
    out = set()
    for line in data.splitlines()[1:]:
        p = line.split()
        if len(p) >= 7:
            out.add(b" ".join([p[4]] + p[6:]))
    return frozenset(out)


def _numbers(path, sep):
    """The first number after each key of a "key value" file, by key."""
    out = {}
    try:
        data = read_kept(path, 1 << 16)
    except OSError:
        return out
    for line in data.splitlines():
        k, _, v = line.partition(sep)
        v = v.split()
        if v and v[0].isdigit():
            out[k.strip()] = int(v[0])
    return out


def memory_charge():
    """The memory the container holds that neither a file nor reclaimable
    kernel caches hold, less this process's own anonymous memory (its heap
    follows the size of the jobs it relayed), in bytes; None if unknown.
    Under gVisor, whose kernel keeps its own count: used less cached
    (/proc/meminfo; this counts the application's memory, not gVisor's own
    heap, where a socket's queue lies: the socket check catches those);
    else the cgroup's charge less its file pages (tmpfs
    included) and reclaimable slab."""
    own = _numbers("/proc/self/status", b":")
    own = own.get(b"RssAnon", own.get(b"VmRSS", 0)) * 1024
    if os.environ.get("REPRO_CPU_CLOCK") == "proc":
        m = _numbers("/proc/meminfo", b":")
        if b"MemTotal" not in m or b"MemFree" not in m:
            return None
        return (m[b"MemTotal"] - m[b"MemFree"] - m.get(b"Cached", 0)) * 1024 - own
    for cur, st, less in (("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", (b"file", b"slab_reclaimable")),
                          ("/sys/fs/cgroup/memory/memory.usage_in_bytes", "/sys/fs/cgroup/memory/memory.stat",
                           (b"total_cache",))):
        try:
            charge = int(read_kept(cur, 64))
        except (OSError, ValueError):
            continue
        s = _numbers(st, b" ")
        return charge - sum(s.get(k, 0) for k in less) - own
    return None


def container_state():
    """Why the container is not as it was before the first job, or None:
    a unix socket that was not there then (gVisor never frees a socket
    that holds its own descriptor in its queue, nor its name; Linux frees
    it, but from a work queue, hence the short wait), or a memory charge
    more than MEMORY_SLACK above the baseline."""
    for wait in (0.0, 0.005, 0.02, 0.1):
        if wait:
            time.sleep(wait)
        now = unix_sockets()
        extra = None if now is None else now - SOCKETS
        if extra is not None and not extra:
            break
    if now is None:
        return "the container's unix socket table is unreadable or over %d bytes" % UNIX_TABLE_CAP
    if extra:
        return "%d unix sockets outlived the job, e.g. %s" % (
            len(extra), b" | ".join(sorted(extra)[:2]).decode("ascii", "replace")[:200])
    charge = memory_charge()
    if charge is None:
        return "the container's memory charge is unreadable"
    if charge > CHARGE + MEMORY_SLACK:
        return "the container holds %d MiB more memory than before its first job (%d MiB allowed)" % (
            (charge - CHARGE) >> 20, MEMORY_SLACK >> 20)
    return None


def retire(end):
    """Sets end's "retired" (and "last") when the job left the container
    changed (container_state); end is the E frame of a job whose processes
    are gone and whose /tmp is empty."""
    if end["last"] or end["status"] == "hostgone":
        return
    why = container_state()
    if why:
        end["retired"] = why
        end["last"] = True


def describe_pids(pids):
    out = []
    for pid in sorted(pids)[:8]:
        st = proc_state(str(pid))
        out.append("%d (%s)" % (pid, st[0].decode() if st else "gone"))
    return ", ".join(out)


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
                try:
                    # The job's own folder is most often empty: under
                    # gVisor rmtree costs six times an rmdir.
                    os.rmdir(p)
                    continue
                except OSError:
                    pass
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
        self.parts.append(framed(kind, payload))
        self.size += 5 + len(payload) + TAG
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
        head = b"R" + U32.pack(len(gaps) + len(rec))
        mac = signer(head)
        mac.update(gaps)
        mac.update(rec)
        host_write(head + gaps)
        host_write(rec)
        host_write(mac.digest())
        self.last = time.monotonic()

    def flush(self):
        if self.parts:
            host_write(b"".join(self.parts))
            self.parts = []
            self.size = 0
            self.first = None
            self.last = time.monotonic()




# ------------------------------------------------------------ a job's phases
#
# Every job, of either kind, goes through the same phases, each with one
# place here: Child starts it (the zygote forks the job's child holding
# three fresh pipes), the job's own loop runs it (run_job, through the
# phases of JobRun: the limits and the record protocol; run_evalplus_job:
# EvalPlus's driver) and reads the host's stdin through host_during,
# stop_job ends every process of it and checks what must hold after any
# job, and send_end empties /tmp, checks the container's state and sends
# the E frame.


class Child:
    """One job's child, forked by the zygote with three fresh pipes, and
    the supervisor's non-blocking ends of them: jw (the child's job pipe,
    -1 once closed), rfd (its result pipe) and efd (its stderr). skip holds
    the processes of the container that are not the job's. A child that
    cannot be forked ends the job ("setup") and this supervisor."""

    def __init__(self, jid, zyg):
        os.mkdir(WORKDIR, 0o700)
        jr, jw = os.pipe()
        rfd, wfd = os.pipe()
        efd_r, efd_w = os.pipe()
        pid, why = zyg.fork([jr, wfd, efd_w])
        for fd in (jr, wfd, efd_w):
            os.close(fd)
        self.skip = {os.getpid(), zyg.pid}
        if pid is None:
            for fd in (jw, rfd, efd_r):
                os.close(fd)
            sweep(self.skip)
            empty_tmp()
            send_json(b"E", {"job": jid, "status": "setup", "detail": why, "records": 0, "elapsed": 0.0, "exit": 0,
                             "stderr": "", "stderr_bytes": 0, "maxrss_kb": 0, "last": True})
            fatal("job %s: %s" % (jid, why))
        for fd in (jw, rfd, efd_r):
            os.set_blocking(fd, False)
        self.pid, self.jw, self.rfd, self.efd = pid, jw, rfd, efd_r
        self.stderr = bytearray()  # the first STDERR_KEEP bytes
        self.stderr_total = 0

    def read_stderr(self):
        """Reads what the child's stderr holds, keeping the first
        STDERR_KEEP bytes; False once the pipe has ended."""
        try:
            chunk = os.read(self.efd, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.stderr_total += len(chunk)
        room = STDERR_KEEP - len(self.stderr)
        if room > 0:
            self.stderr += chunk[:room]
        return True

    def close_jw(self):
        if self.jw >= 0:
            os.close(self.jw)
            self.jw = -1


def host_during(jid):
    """Reads the host's stdin while job jid runs: (status, detail,
    cancels), status None while the job goes on; "hostgone" when stdin
    ended, "channel" when it holds what the host did not send, "cancelled"
    when the host cancelled this job (cancels of them)."""
    if not HOST.fill():
        return "hostgone", "stdin closed or broken", 0
    try:
        got = cancels_for(jid)
    except Forged as e:
        status, detail = channel_broken(e)
        return status, detail, 0
    if got:
        return "cancelled", "stopped by the host", got
    return None, "", 0


def stop_job(jid, ch, zyg, status, detail, close=()):
    """Ends every process of job jid and checks what must hold after any
    job: its child killed (then the descriptors in close closed), every
    process of the job's uid swept, the zygote neither gone nor stopped,
    the process table as before the first job (init, holder, supervisor,
    zygote; no zombie, no other pid), and nothing left on stdin but the
    host's own late cancels. Returns
    (status, detail, cancels, last, clean, waited): the job's final status
    and detail, the late cancels read, whether this supervisor must stop
    after the job, whether the sweep left nothing, and the child's wait
    status and peak RSS."""
    try:
        os.kill(ch.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    ch.close_jw()
    for fd in close:
        os.close(fd)
    clean = sweep(ch.skip)
    waited = zyg.reap()
    last = False
    cancels = 0
    if waited is None:
        # The job stopped or killed the zygote: it fails, and the host
        # starts a new container for the next job.
        status, detail, last = "zygote", "the zygote was killed or stopped during the job", True
        waited = (0, 0)
    elif clean:
        # The process table is as it was before the job, or the job fails
        # and this container serves no other.
        left = leftovers()
        if left:
            status, detail, last = "leftover", "processes outlived the job: %s" % describe_pids(left), True
    if clean and status not in ("hostgone", "channel"):
        # No process of the job is left: what stdin holds now is the
        # host's, or the job's doing.
        try:
            cancels = drain_stdin(jid)
        except Forged as e:
            status, detail = channel_broken(e)
    if status == "channel":
        last = True
    return status, detail, cancels, last, clean, waited


def send_end(out, end, clean):
    """Sends job end's E frame once stop_job has ended its processes:
    with /tmp emptied and the container's state checked (retire), or, if
    the sweep left a process (not clean), at once, and this supervisor
    stops. It stops after the frame too where the host is gone or the job
    was its last (end["last"])."""
    if not clean:
        out.add(b"E", json.dumps(end).encode())
        out.flush()
        fatal("processes survived the sweep after job %s" % end["job"])
    empty_tmp()
    retire(end)
    out.add(b"E", json.dumps(end).encode())
    out.flush()
    if end["status"] == "hostgone":
        os._exit(0)
    if end["last"]:
        fatal("job %s: %s" % (end["job"], end.get("retired", end["detail"])))


def doing(k):
    """What a job's per-input clock times: input k's call, or (k < 0) the
    program's loading, before the load mark."""
    return "loading the program" if k < 0 else "input %d" % k


def over_limit(k, limit):
    return "%s used more than %.2f s of CPU time" % (doing(k), limit)


def run_job(job, body, zyg, clock):
    """Runs one job; body is the program and the inputs. Each phase is a
    method of JobRun, which holds the job's running state, and enforces
    its own part of the module comment."""
    run = JobRun(job, body, clock)
    run.start(zyg)
    run.watch()
    run.end(zyg)


class JobRun:
    """One job of a program and its list of inputs (run_job's kind), and
    its running state: its limits, its child and the job pipe, the clocks
    its limits run on and what it has sent the host. Its phases, in the
    order run_job calls them: the header (the constructor), start, watch
    (until the job's status is decided, taking the child's records through
    on_job_read, on_load_mark and on_result) and end. status is None while
    the job goes on; the phase that decides it sets status and detail."""

    # -------------------------------------------------------- the header

    def __init__(self, job, body, clock):
        """Reads and checks the job's header before anything of the job
        exists: the limits as this process applies them (see the module
        comment: the host holds the load allowance and the list's limit by
        its own clock, and this process at clock_scale times their value)
        and the bounds of every input in body. A header that does not add
        up stops this supervisor."""
        jid = job["job"]
        n = int(job["n"])
        limits = job["limits"]
        if len(limits) != n:
            fatal("job %s: %d limits for %d inputs" % (jid, len(limits), n))
        first_extra = float(job["first_extra"])
        phase_limit = float(job["phase_limit"])
        # The load allowance and the list's limit as this process applies them
        # (see the module comment): the host holds them by its own clock.
        clock_scale = float(job["clock_scale"])
        if not 1.0 <= clock_scale <= 64.0:
            fatal("job %s: clock_scale %r" % (jid, clock_scale))
        phase_cap = phase_limit * clock_scale
        wall_factor = float(job["wall_factor"])
        record_cap = int(job["record_cap"])
        byte_cap = int(job["byte_cap"])
        exact = bool(job.get("exact"))
        overrun = float(job.get("overrun", 1.0))
        if not 1.0 <= overrun <= 16.0:
            fatal("job %s: overrun %r" % (jid, overrun))
        lens = job["input_lens"]
        expect = job.get("expect") or [0.0] * n
        program_len = int(job["program_len"])
        if len(lens) != n or len(expect) != n or program_len > len(body):
            fatal("job %s: %d input lengths and %d expected times for %d inputs" % (jid, len(lens), len(expect), n))
        # The job's program and inputs, read and checked by the supervisor so
        # that no child ever holds this process's standard input, are passed on
        # through the child's own pipe: header and program first, then the
        # inputs a window at a time (see the module comment).
        inputs = memoryview(body)[program_len:]
        starts = []
        pos = 1
        for ln in lens:
            starts.append(pos)
            pos += int(ln) + 1
        if len(inputs) != max(pos, 2) or inputs[:1] != b"[":
            fatal("job %s: the input lengths do not add up to the inputs" % jid)
        # The child's header holds only what the child reads, not the limits,
        # lengths and times that are the supervisor's to use.
        header = json.dumps({k: job[k] for k in CHILD_KEYS if k in job}, separators=(",", ":")).encode()
        self.jid, self.n, self.limits, self.expect = jid, n, limits, expect
        self.first_extra, self.phase_limit, self.clock_scale, self.phase_cap = first_extra, phase_limit, clock_scale, phase_cap
        self.wall_factor, self.record_cap, self.byte_cap, self.exact = wall_factor, record_cap, byte_cap, exact
        self.overrun = overrun
        self.clock = clock
        self.inputs, self.lens, self.starts = inputs, lens, starts
        self.pending = memoryview(U32.pack(len(header)) + header + body[:program_len])
        self.released = 0  # inputs released to the child
        self.win_n = 0  # inputs in the latest window
        self.win_cpu = 0.0  # the job's CPU time when it was released
        self.jw_watched = False

    # ------------------------------------------------------ the job pipe

    def window(self, size):
        """The frame of the next size inputs: a JSON array of their
        argument lists, cut from the host's array at the item bounds."""
        end = self.released + size
        part = self.inputs[self.starts[self.released] : self.starts[end - 1] + int(self.lens[end - 1])]
        return U32.pack(len(part) + 2) + b"[" + part + b"]"

    def release(self, size):
        """Queues the next size inputs for the child (push writes them).
        It is called at the load mark, for input 0, and by refill, for each
        later window: never before the load mark."""
        self.pending = memoryview(bytes(self.pending) + self.window(size))
        self.released += size
        self.win_n = size

    def next_size(self, cpu):
        """The window after one of win_n inputs that took cpu seconds: up
        to WINDOW_GROWTH times as many, as many as use at most WINDOW_SHARE
        of the smallest limit among them both at the last window's pace
        and by the canonical solution's times; one where exact. The pace
        counts the clock's resolution as used (under gVisor's clock of
        ticks a fast window reads 0), and the canonical times show the
        heavy inputs that a list often holds at its end."""
        if self.exact:
            return 1
        per = (cpu + self.clock.resolution) / self.win_n
        size = min(WINDOW_GROWTH * self.win_n, WINDOW_MAX, self.n - self.released)
        while size > 1:
            end = self.released + size
            if max(per * size, sum(self.expect[self.released:end])) <= WINDOW_SHARE * min(self.limits[self.released:end]):
                break
            size //= 2
        return size

    def push(self):
        """Writes what is pending to the child's job pipe, as far as the
        pipe takes it; the rest waits for POLLOUT. The pipe closes once
        every input is out."""
        ch = self.ch
        while self.pending:
            try:
                k = os.write(ch.jw, self.pending[: 1 << 16])
            except BlockingIOError:
                break
            except OSError:
                k = len(self.pending)  # the child is gone; its pipe tells
            self.pending = self.pending[k:]
        if self.pending:
            if not self.jw_watched:
                self.poller.register(ch.jw, select.POLLOUT)
                self.jw_watched = True
            return
        if self.jw_watched:
            self.poller.unregister(ch.jw)
            self.jw_watched = False
        if self.released == self.n:
            ch.close_jw()

    # --------------------------------------------------------- the start

    def start(self, zyg):
        """Forks the job's child and writes it its header and program, and
        no input: none is released before the load mark (G), so loading
        runs under the load allowance alone, with no input to work on, and
        input 0's call under its own limit from the mark (see the module
        comment). Until its L record the child has 30 s of wall time to
        read its job."""
        self.begin(Child(self.jid, zyg), Out())

    def begin(self, ch, out):
        """The job's running state from its child's start: ch, the child
        and its pipes, and out, the frames to the host."""
        self.ch, self.out = ch, out
        self.started = start = time.monotonic()
        self.status = None
        self.detail = ""
        self.loaded = False
        self.called = False  # the child's G record came: input 0's call has begun
        self.cpu_now = 0.0  # the highest reading of the job's clock (under gVisor it can go back)
        self.cpu_loaded = None  # the job's clock at the load mark
        self.records = 0
        self.total = 0
        self.buf = bytearray()
        # The clocks of the limits (see watch): the wall time and the job's
        # CPU time at the previous record, and the job's CPU time at its L
        # record.
        self.wall_last = start
        self.cpu_last = self.cpu_start = 0.0
        self.cpu_limit = 30.0  # to read the job
        self.cpu_cap = self.cpu_limit  # cpu_limit as applied to the job clock: the load allowance scaled
        self.idle_input = self.idle_total = 0.0
        # The overrun (see over_input): the detail of the input's limit that
        # decided the job, None while none struck; the job's clock then;
        # the CPU time the input used in all and the job's clock when the
        # overrun ended; whether the input was still running at its end.
        self.past = None
        self.past_cap = 0.0
        self.cpu_decided = 0.0
        self.past_cpu = self.past_job_cpu = 0.0
        self.past_running = self.past_done = False
        self.tick_wall, self.tick_cpu = start, 0.0
        self.next_check = start + CHECK_EVERY
        self.poller = select.poll()
        self.poller.register(ch.rfd, select.POLLIN)
        self.poller.register(ch.efd, select.POLLIN)
        self.watching_stdin = False
        self.got_records = False
        self.refilled = False
        self.cancels = 0
        self.push()

    # --------------------------------------------------------- the watch

    def watch(self):
        """Runs the job until its status is decided: waits on the child's
        pipes and, once the child has read its job, the host's stdin;
        checks the job's clocks every CHECK_EVERY seconds (check_time) and
        takes the child's records as they come (read_results). Frames for
        the host wait at most FLUSH_AFTER seconds, and a P frame goes out
        when none went out for HEARTBEAT seconds."""
        ch, out, poller = self.ch, self.out, self.poller
        while self.status is None:
            now = time.monotonic()
            self.check_time(now)
            if self.status is not None:
                break
            until = self.next_check if self.loaded else self.wall_last + self.cpu_limit
            if now - out.last >= HEARTBEAT:
                out.add(b"P", b"")
            if out.due(now):
                out.flush()
            elif out.parts:
                until = min(until, out.first + FLUSH_AFTER)
            if self.got_records and not self.refilled:
                # Let results gather: one wake-up then reads many, which costs
                # the container's CPU far less than one wake-up per result. The
                # CPU time of the few inputs run meanwhile is charged to the
                # first of them, a millisecond at most. (A child that waits for
                # its next window is not kept waiting.)
                time.sleep(GATHER)
            self.got_records = self.refilled = False
            events = poller.poll(max(0, int((until - now) * 1000) + 1))
            for fd, ev in events:
                if self.status is not None:
                    break
                if fd == ch.jw:
                    self.push()
                elif fd == ch.efd:
                    if not ch.read_stderr():
                        poller.unregister(ch.efd)
                elif fd == 0:
                    self.status, self.detail, got = host_during(self.jid)
                    self.cancels += got
                elif fd == ch.rfd:
                    self.read_results()

    def timed(self):
        """What the per-input clock times now, as doing takes it: -1 (the
        loading) before the load mark or in a job with no inputs (whose
        load allowance stands to its end, and which has no input's limit
        nor overrun), else the input of the next result."""
        return -1 if self.cpu_loaded is None or self.n == 0 else self.records

    def check_time(self, now):
        """The checks of the job's clocks while it runs. Before its L
        record the child must read its job within cpu_limit seconds of
        wall time ("setup"). From it, every CHECK_EVERY seconds, the job's
        CPU time (every process it started, see JobClock) is held to the current limit and the list's (over_input,
        over_list) and its idle time to the idle rule (over_idle). Idle is
        wall time in which the job used no CPU time, counted at each check
        only when none of its processes and threads is running or waiting
        for a CPU at that moment: a job that is merely starved of CPU by a
        loaded host is always runnable, and never idle."""
        if not self.loaded:
            if now - self.wall_last >= self.cpu_limit:
                self.status, self.detail = "setup", "the child did not read its job"
            return
        if now < self.next_check:
            return
        self.next_check = now + CHECK_EVERY
        c = self.clock()
        self.cpu_now = max(self.cpu_now, c)
        dw, dc = now - self.tick_wall, max(0.0, c - self.tick_cpu)
        idle = 0.0
        if dc < dw and not job_runnable(self.ch.skip):
            idle = dw - dc
        self.tick_wall, self.tick_cpu = now, c
        self.idle_input += idle
        self.idle_total += idle
        if not self.over_limits(c):
            self.over_idle()

    def over_limits(self, c, result=False):
        """Whether the job's CPU time c is over the input's limit or the
        list's (over_input, over_list). Where c is past both, the one that
        struck first decides, as a check would have found it (a check runs
        every CHECK_EVERY seconds; a reading at a call's end may be the
        first in a while): the list's where its limit came at a lower
        clock than the input's, else the input's. result: as for
        over_input."""
        if self.past is None and self.cpu_start + self.phase_cap < self.cpu_last + self.cpu_cap:
            return self.over_list(c) or self.over_input(c, result)
        return self.over_input(c, result) or self.over_list(c)

    def over_input(self, c, result=False):
        """Whether the job's CPU time c is over the current limit, cpu_cap
        (the load allowance, scaled, before the load mark; else the
        input's), since the previous record (L, G or a result); if so the
        job ends ("timeout"). result: c was read at the call's end (for a
        result, which then does not count, or when the child ended its
        pipe) rather than at a check while the job runs. The detail is the
        same whichever reading found the limit struck: a verdict does not
        depend on when this process's checks happened to run.

        The overrun: where the header's overrun is above 1, an input's
        call found over its limit at a check is not stopped there. Its
        verdict is decided then (a timeout, with this detail and the job's
        CPU time at this moment, whatever happens next: past_end), and no
        result of it counts; but it runs on to overrun times its limit, so
        that the host learns whether it would have finished within that
        (past_cpu, past_running). A timeout whose input was still running
        there is not time-sensitive: the host need not run it again."""
        if self.past is not None:
            return self.over_past(c)
        if c - self.cpu_last > self.cpu_cap:
            if self.overrun > 1.0 and self.timed() >= 0:
                self.past = over_limit(self.timed(), self.cpu_cap)
                self.past_cap = self.cpu_cap * self.overrun
                self.cpu_decided = c
                # The reading may be past one of the overrun's ends too (a
                # check the host delayed, or the call's end).
                if self.over_past(c):
                    return True
                if not result:
                    return False
                # Found by the call's own end (its result, or the child's):
                # the call ended past its limit, within its overrun.
                self.past_end(c, False)
                return True
            self.status = "timeout"
            self.detail = over_limit(self.timed(), self.cpu_cap)
            return True
        return False

    def over_past(self, c):
        """Whether job CPU time c ends the overrun: at overrun times the
        input's limit (the call still running there) or at the list's own
        limit, unscaled, whichever comes first on the job clock (a reading
        may be past both). No overrun goes past the list's own limit, on
        any clock: where the host holds the list by the container's clock,
        it would stop the job there with its own account."""
        running = c - self.cpu_last > self.past_cap
        at_list = c - self.cpu_start > self.phase_limit
        if running and at_list:
            running = self.cpu_last + self.past_cap <= self.cpu_start + self.phase_limit
        if running or at_list:
            self.past_end(c, running)
            return True
        return False

    def past_end(self, c, running):
        """Ends an overrun at job CPU time c: running, the input was still
        in its call at overrun times its limit; else it ended before (a
        result, an exit, the list's limit, the idle rule)."""
        self.status = "timeout"
        self.past_cpu = max(0.0, c - self.cpu_last)
        self.past_job_cpu = max(0.0, c - self.cpu_start)
        self.past_running, self.past_done = running, True

    def over_list(self, c):
        """Whether the job's CPU time c is over the list's limit, as this
        process applies it (phase_cap), since the L record, loading
        included; if so the job ends ("timeout"), with the detail a check
        gives, whichever reading found it."""
        if c - self.cpu_start > self.phase_cap:
            self.status = "timeout"
            self.detail = "the list used more than %.1f s of CPU time" % self.phase_cap
            return True
        return False

    def over_idle(self):
        """The idle rule: the job ends ("timeout") once it has been idle
        for wall_factor times the current limit since the previous record,
        or for wall_factor times the list's limit in all. A job that sleeps
        or blocks uses no CPU time: this rule alone stops it."""
        if self.idle_input >= self.wall_factor * self.cpu_limit:
            self.status = "timeout"
            self.detail = "%s was idle (sleeping or blocked) for more than %.1f s" % (
                doing(self.timed()), self.wall_factor * self.cpu_limit)
        elif self.idle_total >= self.wall_factor * self.phase_limit:
            self.status = "timeout"
            self.detail = "the list was idle (sleeping or blocked) for more than %.1f s" % (
                self.wall_factor * self.phase_limit)

    def read_results(self):
        """Reads what the child's result pipe holds and takes each whole
        record in it while the job goes on: L first (on_job_read), then G
        (on_load_mark) and the results (on_result). The job's output is
        held to byte_cap bytes in all and record_cap bytes a record; a
        child that ends its pipe ends the job ("done" where it has no input
        and sent no record after L, else "exited")."""
        rfd = self.ch.rfd
        try:
            chunk = os.read(rfd, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.poller.unregister(rfd)
            if self.loaded:
                # The child's end is read against its limits as a result is:
                # a check may not have run since it struck one (a loaded
                # host delays this process), and the verdict is then that
                # limit, not how the child ended.
                c = self.clock()
                self.cpu_now = max(self.cpu_now, c)
                if self.over_limits(c, result=True):
                    return
            if self.loaded and self.n == 0 and not self.buf:
                self.status = "done"
                return
            self.status = "exited"
            self.detail = "the child ended after %d of %d records" % (self.records, self.n)
            return
        self.total += len(chunk)
        if self.total > self.byte_cap:
            self.status, self.detail = "toolarge", "more than %d bytes of output" % self.byte_cap
            return
        buf = self.buf
        buf += chunk
        now = time.monotonic()
        c = self.clock()
        self.cpu_now = max(self.cpu_now, c)
        while self.status is None and len(buf) >= 4:
            ln = U32.unpack_from(buf, 0)[0]
            if ln == 0 or ln > self.record_cap:
                self.status, self.detail = "toolarge", "a record of %d bytes" % ln
                return
            if len(buf) < 4 + ln:
                return
            with memoryview(buf) as view:
                rec = view[4 : 4 + ln].tobytes()
            del buf[: 4 + ln]
            kind = rec[:1]
            if not self.loaded:
                self.on_job_read(kind, now, c)
            elif kind == b"G":
                self.on_load_mark(now, c)
            else:
                self.on_result(kind, rec, now, c)

    def on_job_read(self, kind, now, c):
        """The child's first record, which must be L: it has read its job,
        and the job's limits run from here (the load allowance first, and
        the list's), at wall time now and job CPU time c. (The host's clock
        of the job started before the host sent it: see the module
        comment.) From here the host's stdin is watched for its cancels."""
        if kind != b"L":
            self.status, self.detail = "protocol", "the first record is not L"
            return
        self.loaded = True
        self.out.add(b"L", b"")
        self.out.flush()
        self.wall_last, self.cpu_last, self.cpu_start, self.win_cpu, self.cpu_now = now, c, c, c, c
        self.tick_wall, self.tick_cpu = now, c
        self.next_check = now + CHECK_EVERY
        self.cpu_limit = self.first_extra
        self.cpu_cap = self.first_extra * self.clock_scale
        self.poller.register(0, select.POLLIN)
        self.watching_stdin = True
        # With no inputs the job still loads the program (EvalPlus runs it
        # too): it is done when the child ends without an M record.

    def on_load_mark(self, now, c):
        """The child's G record, the load mark: the load allowance ends
        here, and input 0 is released, with its own limit from now. It only
        ever turns a timeout into a fail (see the module comment); a second
        or late one is the job's doing ("protocol"), and one past the load
        allowance comes too late ("timeout")."""
        if self.called or self.records:
            self.status, self.detail = "protocol", "a second or late G record"
            return
        if self.over_limits(c, result=True):
            return
        self.called = True
        self.cpu_loaded = c
        self.wall_last, self.idle_input = now, 0.0
        if self.n:
            # Input 0's limit runs from here; a job with no inputs keeps its
            # load allowance, from its L record to its end.
            self.cpu_last = c
        # The host reads its clock of the loading now.
        self.out.add(b"G", b"")
        self.out.flush()
        if self.n:
            self.cpu_limit = self.cpu_cap = self.limits[0]
            self.win_cpu = c
            if not self.released:
                self.release(1)
                self.push()

    def on_result(self, kind, rec, now, c):
        """A result record rec (V, X, U or M) that came at wall time now
        and job CPU time c: it must be for an input already released, and
        come within the input's limit, the list's and its window's
        (over_input, over_list, over_window); then it goes to the host with
        its gaps, and the next input's limit runs from it. The job ends at
        its last input ("done") or at a result that is not a value
        ("stopped"); the result that completes a window releases the next
        (refill)."""
        if self.past is not None:
            # The input past its limit finished: within its overrun unless
            # this reading finds it past that (or past the list's limit).
            if not self.over_past(c):
                self.past_end(c, False)
            return
        if kind not in (b"V", b"X", b"U", b"M"):
            self.status, self.detail = "protocol", "unknown record kind %r" % kind
            return
        if self.records >= self.n and not (self.n == 0 and kind == b"M"):
            self.status, self.detail = "protocol", "more records than inputs"
            return
        if self.records >= self.released and kind != b"M":
            # A result for an input the child does not have yet (before the
            # load mark, input 0's).
            self.status, self.detail = "protocol", "a result before its input %d was released" % self.records
            return
        # A result that came too late does not count, nor does one past the
        # list's limit.
        if self.over_limits(c, result=True) or self.over_window(c):
            return
        self.out.record(GAP.pack(max(0.0, c - self.cpu_last), now - self.wall_last), rec)
        self.records += 1
        self.got_records = True
        self.wall_last, self.cpu_last, self.idle_input = now, max(c, self.cpu_last), 0.0
        if kind != b"V":
            self.status = "stopped"
            return
        if self.records == self.n:
            self.status = "done"
            return
        self.cpu_limit = self.cpu_cap = self.limits[self.records]
        if self.records == self.released:
            self.refill(c)

    def over_window(self, c):
        """Whether a result at job CPU time c is over its input's limit
        since its window was released; if so the job ends ("inexact").
        Every input of a window is the child's from its release: the
        program may have spent this time on any of them, or held back
        earlier results. Only a run with one input per window tells."""
        if self.win_n == 0:
            # No window was released: a result of the loading (M), or of a
            # job with no inputs.
            return False
        if c - self.win_cpu > self.cpu_limit:
            self.status = "inexact"
            self.detail = "input %d: %.2f s of CPU time since its window of %d inputs was released, over its limit of %.2f s (%.2f s since the previous result)" % (
                self.records, c - self.win_cpu, self.win_n, self.cpu_limit, c - self.cpu_last)
            return True
        return False

    def refill(self, c):
        """Releases the next window once every result of the one before
        has come, at job CPU time c, sized by next_size. A result already
        written for an input of it was written before its input was
        released: an honest child waits for the window first
        ("protocol")."""
        if self.buf:
            self.status, self.detail = "protocol", "a result before its input %d was released" % self.records
            return
        self.release(self.next_size(c - self.win_cpu))
        self.win_cpu = c
        self.push()
        self.refilled = True

    # ----------------------------------------------------------- the end

    def end(self, zyg):
        """Ends the job once its status is decided (stop_job) and sends its
        E frame (send_end), with "cpu", the job's CPU time from the L record
        to the moment it was decided (its last result, the check that
        stopped it, or the child's end), loading included, and "load_cpu",
        of that the loading, up to the load mark. A job whose child never
        sent L ends as "setup" (unless the host is gone) and is this
        supervisor's last."""
        elapsed = time.monotonic() - self.started
        status, detail, cpu, load_cpu = self.decided()
        if self.watching_stdin:
            self.poller.unregister(0)
        ch = self.ch
        status, detail, late, last, clean, waited = stop_job(self.jid, ch, zyg, status, detail, close=(ch.rfd, ch.efd))
        end = {
            "job": self.jid,
            "status": status,
            "detail": detail,
            "records": self.records,
            "called": self.called,
            "elapsed": elapsed,
            "cpu": cpu,
            "load_cpu": load_cpu,
            "exit": os.waitstatus_to_exitcode(waited[0]),
            "stderr": ch.stderr.decode("utf-8", "replace"),
            "stderr_bytes": ch.stderr_total,
            "maxrss_kb": waited[1],
            "cancels": self.cancels + late,
            "last": last or not clean or not self.loaded,
        }
        if self.past is not None or self.past_cpu:
            end["past_cpu"] = self.past_cpu
            end["past_job_cpu"] = self.past_job_cpu
            end["past_running"] = self.past_running
        send_end(self.out, end, clean)

    def decided(self):
        """The job's verdict as its watch decided it, before stop_job has
        looked at what is left of it: (status, detail, cpu, load_cpu)."""
        cpu = max(0.0, self.cpu_now - self.cpu_start) if self.loaded else 0.0
        load_cpu = cpu if self.cpu_loaded is None else max(0.0, self.cpu_loaded - self.cpu_start)
        status, detail = self.status, self.detail
        if self.past is not None:
            # The job was decided when its input struck its limit (see
            # over_input): whatever of the job's running ended the overrun
            # (OVERRUN_ENDS), the job is that timeout, and its clock is what
            # it read then. The host's cancel, its end, a channel the job
            # broke, or what stop_job finds after any job, stand as ever.
            if not self.past_done:
                self.past_end(self.cpu_now, False)
            if status in OVERRUN_ENDS:
                status, detail = "timeout", self.past
            cpu = max(0.0, self.cpu_decided - self.cpu_start)
        if not self.loaded and status != "hostgone":
            detail = "%s: %s" % (status, detail)
            status = "setup"
        return status, detail, cpu, load_cpu


# ------------------------------------------------------------ EvalPlus jobs

# The header fields an EvalPlus job's child and driver read.
EVALPLUS_CHILD_KEYS = ("job", "kind", "program_len", "inputs_len", "dataset", "base_only", "min_time_limit",
                       "gt_time_limit_factor", "fsize")
EVALPLUS_RESULT_CAP = 1 << 16  # bytes of the driver's result line


def job_survivors(skip):
    """The live processes of the container outside BASELINE and skip (a
    zombie is no process: its parent reaps it)."""
    out = []
    for pid in process_table() - BASELINE - skip:
        st = proc_state(str(pid))
        if st is not None and st[0] != b"Z":
            out.append(pid)
    return out


def run_evalplus_job(job, body, zyg):
    """Runs one sample through EvalPlus's own scoring core (the "evalplus"
    job kind of `repro humaneval --engine evalplus`); body is the sample
    and the task's line of the dataset. The zygote forks the job's child as
    for any job; the child execs evalplus_driver.py, a fresh driver for
    this sample alone, which computes the task's ground truth with
    EvalPlus's trusted_exec and runs EvalPlus's untrusted_check on each
    input list. The job ends when the driver has ended (or at its wall
    limit); then every process of the job is killed and the process table
    checked as after any job, and only then is the driver's result read
    from its pipe and sent to the host, as the E frame's "result": no
    process of the job exists any more to write there, and none can reach
    a later job. The E frame's "outlived" counts the processes of the job
    that were still alive when its driver had ended (the sweep killed
    them). The supervisor does not read the result: the host parses it."""
    jid = job["job"]
    wall = float(job["wall_limit"])
    size = int(job["program_len"]) + int(job["inputs_len"])
    if size != len(body):
        fatal("job %s: %d bytes of sample and dataset line, %d announced" % (jid, len(body), size))
    header = json.dumps({k: job[k] for k in EVALPLUS_CHILD_KEYS if k in job}, separators=(",", ":")).encode()
    pending = memoryview(U32.pack(len(header)) + header + body)
    ch = Child(jid, zyg)
    pid, rfd = ch.pid, ch.rfd
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    poller.register(ch.efd, select.POLLIN)
    poller.register(ch.jw, select.POLLOUT)
    poller.register(0, select.POLLIN)
    # The zygote's socket becomes readable when it reports that the child
    # (the driver) ended; zyg.reap reads that report after the sweep.
    poller.register(zyg.sock, select.POLLIN)
    out = Out()
    start = time.monotonic()
    status, detail = None, ""
    result = bytearray()
    cancels = 0
    while status is None:
        now = time.monotonic()
        if now - start >= wall:
            status, detail = "timeout", "EvalPlus's driver did not end within %.0f s" % wall
            break
        if now - out.last >= HEARTBEAT:
            out.add(b"P", b"")
            out.flush()
        events = poller.poll(max(1, int(min(HEARTBEAT, start + wall - now) * 1000)))
        for fd, ev in events:
            if fd == ch.jw:
                try:
                    k = os.write(ch.jw, pending[: 1 << 16])
                except BlockingIOError:
                    continue
                except OSError:
                    k = len(pending)  # the driver is gone; its end tells
                pending = pending[k:]
                if not pending:
                    poller.unregister(ch.jw)
                    ch.close_jw()
            elif fd == rfd:
                try:
                    chunk = os.read(rfd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    poller.unregister(rfd)
                    continue
                result += chunk
                if len(result) > EVALPLUS_RESULT_CAP:
                    status, detail = "toolarge", "more than %d bytes on the driver's result pipe" % EVALPLUS_RESULT_CAP
                    break
            elif fd == ch.efd:
                if not ch.read_stderr():
                    poller.unregister(ch.efd)
            elif fd == 0:
                status, detail, got = host_during(jid)
                cancels += got
                if status is not None:
                    break
            elif fd == zyg.sock.fileno():
                status = "done"
                break
    elapsed = time.monotonic() - start
    outlived = job_survivors(ch.skip | {pid})
    # The driver's and the sample's processes, as after any job.
    status, detail, late, last, clean, waited = stop_job(jid, ch, zyg, status, detail)
    cancels += late
    if clean:
        # Every process of the job is gone: what the result pipe still
        # holds was written by the job, and nothing can add to it.
        while status == "done":
            try:
                chunk = os.read(rfd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            result += chunk
            if len(result) > EVALPLUS_RESULT_CAP:
                status, detail = "toolarge", "more than %d bytes on the driver's result pipe" % EVALPLUS_RESULT_CAP
    os.close(rfd)
    os.close(ch.efd)
    end = {
        "job": jid,
        "status": status,
        "detail": detail,
        "records": 0,
        "elapsed": elapsed,
        "exit": os.waitstatus_to_exitcode(waited[0]),
        "stderr": ch.stderr.decode("utf-8", "replace"),
        "stderr_bytes": ch.stderr_total,
        "maxrss_kb": waited[1],
        "cancels": cancels,
        "outlived": len(outlived),
        "last": last or not clean,
    }
    if status == "done" and clean:
        end["result"] = result.decode("utf-8", "replace")
    send_end(out, end, clean)


# The inode of the initial PID namespace is a kernel constant
# (PROC_PID_INIT_INO).
HOST_PID_NS = "pid:[4026531836]"


def in_sandbox():
    """The supervisor kills every process of its user after each job: it
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
    if sys.argv[1:] == ["zygote"]:
        zygote()
        os._exit(0)
    set_nondumpable("supervisor")
    os.umask(0o077)
    # The channel key comes first, while this is the container's only
    # program.
    head = read_exact(0, 5)
    if head is None:
        os._exit(0)
    if head != b"K" + U32.pack(32):
        fatal("the host's first frame is not the channel key")
    key = read_exact(0, 32)
    if key is None:
        os._exit(0)
    set_key(key)
    if os.listdir(TMP):
        empty_tmp()
    if sys.version_info < (3, 11):
        # The zygote's interpreter takes -P (PYTHON_FLAGS), new in 3.11.
        fatal("the image's python3 is %d.%d; the harness needs 3.11 or later" % sys.version_info[:2])
    wait_for_holder()
    zyg = Zygote()
    clock = JobClock(zyg)
    global BASELINE, SOCKETS, CHARGE
    BASELINE = process_table()
    SOCKETS, CHARGE = unix_sockets(), memory_charge()
    if SOCKETS is None or CHARGE is None:
        fatal("the container's unix sockets or memory charge are unreadable (/proc/net/unix, the cgroup's memory files)")
    if len(BASELINE) != 4 or not {1, os.getpid(), zyg.pid} <= BASELINE:
        fatal(
            "the container holds processes other than init, the holder, the supervisor (%d) and the zygote (%d): %s"
            % (os.getpid(), zyg.pid, describe_pids(BASELINE))
        )
    send_json(
        b"H",
        {
            "protocol": PROTOCOL,
            "python": sys.version,
            "hexversion": sys.hexversion,
            "pid": os.getpid(),
            "uid": os.getuid(),
            "zygote": zyg.pid,
            # The job clock: "cgroup", or "proc" (gVisor's, see JobClock).
            "clock": clock.kind,
        },
    )
    while True:
        try:
            f = HOST.next()
        except Forged as e:
            fatal("stdin holds %s" % e)
        if f is None:
            os._exit(0)
        kind, body, n = f
        if kind == b"C":
            continue  # a cancel that came after its job ended
        if kind == b"S":
            send(b"S", body)
            continue
        header = json.loads(body[:n])
        if header.get("kind") == "evalplus":
            run_evalplus_job(header, body[n:], zyg)
        else:
            run_job(header, body[n:], zyg, clock)


if __name__ == "__main__":
    main()

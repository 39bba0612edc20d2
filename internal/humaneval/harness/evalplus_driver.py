"""repro's driver for EvalPlus's own scoring core (repro humaneval --engine evalplus).

It runs inside the evaluator container with the EvalPlus tree (pinned by its
tree digest, checked by the host) mounted read-only at $REPRO_EVALPLUS_TREE and
the dataset's JSON lines at $REPRO_EVALPLUS_DATASET; $REPRO_EVALPLUS_BENCHMARK is
EvalPlus's dataset name, humaneval or mbpp (whose inputs EvalPlus's own
mbpp_deserialize_inputs rebuilds after loading). For each task the host
sends, it does what evalplus.evaluate.evaluate does for that task, with
EvalPlus's own functions and arguments: get_groundtruth's trusted_exec of the
canonical solution on the base and plus inputs, then check_correctness's
untrusted_check of each sample on each input list (fast check, EvalPlus's
time-limit defaults unless the host says otherwise). evalplus.evaluate and
evalplus.data are not imported: they pull in packages the scoring does not need
(datasets, tree_sitter, fire, ...).

The verdicts are EvalPlus's, with EvalPlus's weakness: the sample runs in a
process forked from this one, which holds the expected outputs, and reports
through shared memory it can write itself, so a sample can forge its own
verdict. No sample can write another's: two processes take part.

  relay   the program the host starts (this file, no argument). It reads the
          channel key, the host's first line, before anything else runs, and
          never forks a sample: it execs the driver with a fresh program
          image, its stdin and stdout two sockets (which no process can
          reopen through /proc), passes the host's lines to it, and writes
          each line the driver sends to the host as "tag json", the tag
          HMAC-SHA256 under the key of b"repro-evalplus", the line's number
          (u64, big-endian) and the line. It is non-dumpable.
  driver  this file with the argument "driver": EvalPlus's code, from which
          every sample's process is forked. Its results go on a descriptor
          that each forked process closes before any of its code runs (an
          at-fork hook), with its stdin; its stdout is /dev/null, so what a
          sample prints goes nowhere.

A line on the relay's stdout without a valid tag (a sample that found the
relay's stdout, as gVisor lets a process of the same user open another's
/proc/PID/fd), or a tagged line for another sample than the one the host
awaits, breaks the stream: the host retires the container and scores the
remaining samples in a fresh one.

One compatibility shim: the sandbox has no writable /dev/shm (under runc
there is none, IPC namespace "none"; under runsc gVisor mounts one that the
sandbox's user cannot write), where multiprocessing keeps shared memory and
the semaphores of locked shared values. Shared memory goes to a file in /tmp
instead, under both runtimes, and EvalPlus's shared
values, written by the child and read by the parent after join, are made
without locks; nothing else changes.

Protocol, JSON lines. stdin: {"task_id", "samples": [{"id", "solution"}],
"base_only", "min_time_limit", "gt_time_limit_factor"}. stdout: a hello line,
then per task {"task_id", "gt_seconds"} or {"task_id", "gt_error"}, and per
sample {"task_id", "id", "base_status", "base_fail", "plus_status", "plus_fail"}
where *_fail is the index of the failing input EvalPlus reports (-1 for none).
"""

import hashlib
import hmac
import json
import multiprocessing
import os
import select
import socket
import struct
import sys
import time

RESULTS = None  # the driver's descriptor for its results (a socket to the relay)


def out(obj):
    data = (json.dumps(obj) + "\n").encode()
    view = memoryview(data)
    while view:
        n = os.write(RESULTS, view)
        view = view[n:]


def set_nondumpable():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0 or libc.prctl(3, 0, 0, 0, 0) != 0:
        sys.stderr.write("evalplus_driver.py: cannot become non-dumpable\n")
        os._exit(2)


MAX_LINE = 1 << 24


def relay():
    """The relay (see the module comment)."""
    set_nondumpable()
    head = b""
    while not head.endswith(b"\n"):
        b = os.read(0, 1)
        if not b:
            return 0
        head += b
        if len(head) > 256:
            sys.stderr.write("evalplus_driver.py: the host's first line is not the key\n")
            return 2
    try:
        key = bytes.fromhex(json.loads(head)["key"])
    except (ValueError, KeyError, TypeError):
        key = b""
    if len(key) != 32:
        sys.stderr.write("evalplus_driver.py: the host's first line is not the key\n")
        return 2
    jobs, jobs_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    res, res_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(jobs_child.fileno(), 0)
            os.dup2(res_child.fileno(), 3)
            null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(null, 1)
            os.closerange(4, 1 << 16)
            os.execv(sys.executable, [sys.executable, "-I", os.path.abspath(__file__), "driver"])
        finally:
            os._exit(9)
    jobs_child.close()
    res_child.close()
    mac = hmac.new(key, b"repro-evalplus", "sha256")
    del key
    seq = 0
    buf = b""
    host_open = True
    while True:
        r, _, _ = select.select(([0] if host_open else []) + [res], [], [])
        if 0 in r:
            b = os.read(0, 1 << 16)
            if b:
                jobs.sendall(b)
            else:
                host_open = False
                jobs.shutdown(socket.SHUT_WR)
        if res in r:
            b = res.recv(1 << 16)
            if not b:
                break
            buf += b
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                m = mac.copy()
                m.update(struct.pack(">Q", seq) + line)
                seq += 1
                data = m.hexdigest().encode() + b" " + line + b"\n"
                view = memoryview(data)
                while view:
                    view = view[os.write(1, view) :]
            if len(buf) > MAX_LINE:
                break
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def close_channels():
    """In every process forked from the driver, before its code runs."""
    try:
        os.close(RESULTS)
    except OSError:
        pass
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def failed_index(stat, details, pass_status):
    # evalplus.evaluate's get_failed_tests without test details: "the only
    # and the last fail test", inputs[len(details) - 1].
    if stat == pass_status or not details:
        return -1
    return len(details) - 1


def load_mbpp_module(tree):
    """Imports evalplus/data/mbpp.py from the tree without running
    evalplus/data/__init__.py (which loads Hugging Face datasets) and with
    stand-ins for the download helpers its imports name (wget, tempdir,
    appdirs), none of which the functions used here call."""
    import types

    for name in ("wget", "tempdir", "appdirs"):
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.user_cache_dir = lambda *a, **k: "/nonexistent"
            sys.modules[name] = stub
    import evalplus

    pkg = types.ModuleType("evalplus.data")
    pkg.__path__ = [os.path.join(tree, "evalplus", "data")]
    sys.modules["evalplus.data"] = pkg
    evalplus.data = pkg
    import evalplus.data.mbpp as mbpp

    return mbpp


def main():
    global RESULTS
    if os.environ.get("REPRO_SANDBOX") != "1":
        sys.stderr.write("evalplus_driver.py runs only inside repro's sandbox\n")
        os._exit(2)
    if sys.argv[1:] != ["driver"]:
        return relay()
    RESULTS = 3
    os.register_at_fork(after_in_child=close_channels)
    tree = os.environ["REPRO_EVALPLUS_TREE"]
    sys.path.insert(0, tree)
    # The shim (see the module comment), whatever /dev/shm looks like:
    # under runsc gVisor mounts a /dev/shm of its own, which the sandbox's
    # user cannot write, so its existence says nothing.
    import multiprocessing.heap

    multiprocessing.heap.Arena._dir_candidates = []
    value, array = multiprocessing.Value, multiprocessing.Array

    def unlocked_value(typecode, *args, **kwargs):
        kwargs["lock"] = False
        return value(typecode, *args, **kwargs)

    def unlocked_array(typecode, init, **kwargs):
        kwargs["lock"] = False
        return array(typecode, init, **kwargs)

    multiprocessing.Value, multiprocessing.Array = unlocked_value, unlocked_array
    missing = []
    for mod in ("numpy", "psutil"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        out({"error": "missing", "modules": missing})
        return 3
    from evalplus.eval import PASS, untrusted_check
    from evalplus.gen.util import trusted_exec

    import numpy

    dataset = os.environ.get("REPRO_EVALPLUS_BENCHMARK", "humaneval")
    with open(os.environ["REPRO_EVALPLUS_DATASET"]) as f:
        problems = {p["task_id"]: p for p in (json.loads(line) for line in f if line.strip())}
    not_none = []
    if dataset == "mbpp":
        # EvalPlus's own MBPP+ loading: mbpp_deserialize_inputs rebuilds
        # the inputs JSON cannot hold, as get_mbpp_plus does after reading
        # the file, and the not-None tasks get their ground truth as
        # get_groundtruth records it.
        mbpp = load_mbpp_module(tree)
        from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS

        not_none = MBPP_OUTPUT_NOT_NONE_TASKS
        for task_id, problem in problems.items():
            problem["base_input"] = mbpp.mbpp_deserialize_inputs(task_id, problem["base_input"])
            problem["plus_input"] = mbpp.mbpp_deserialize_inputs(task_id, problem["plus_input"])
    out({"hello": 1, "python": sys.version, "numpy": numpy.__version__, "tasks": len(problems)})

    for line in sys.stdin:
        job = json.loads(line)
        task_id = job["task_id"]
        problem = problems[task_id]
        base_only = bool(job["base_only"])
        program = problem["prompt"] + problem["canonical_solution"]
        start = time.time()
        expected = {}
        try:
            onn = problem["entry_point"] in not_none
            expected["base"], expected["base_time"] = trusted_exec(
                program, problem["base_input"], problem["entry_point"], record_time=True, output_not_none=onn
            )
            if not base_only:
                expected["plus"], expected["plus_time"] = trusted_exec(
                    program, problem["plus_input"], problem["entry_point"], record_time=True, output_not_none=onn
                )
        except BaseException as e:  # the canonical solution failed
            out({"task_id": task_id, "gt_error": "%s: %s" % (type(e).__name__, e)})
            continue
        out({"task_id": task_id, "gt_seconds": time.time() - start})
        for sample in job["samples"]:
            res = {"task_id": task_id, "id": sample["id"]}
            for phase in ("base",) if base_only else ("base", "plus"):
                stat, details = untrusted_check(
                    dataset,
                    sample["solution"],
                    problem[phase + "_input"],
                    problem["entry_point"],
                    expected=expected[phase],
                    atol=problem["atol"],
                    ref_time=expected[phase + "_time"],
                    fast_check=True,
                    min_time_limit=job["min_time_limit"],
                    gt_time_limit_factor=job["gt_time_limit_factor"],
                )
                res[phase + "_status"] = stat
                res[phase + "_fail"] = failed_index(stat, details, PASS)
            out(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())

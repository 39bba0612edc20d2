"""repro's driver for EvalPlus's own scoring core (repro humaneval --engine evalplus).

One driver scores one sample and ends: it is the child of one job of the
supervisor (supervisor.py, job kind "evalplus"), forked by the zygote like
any job's child, which execs this file with a fresh program image:

  python3 -I evalplus_driver.py job HEADER-JSON

with the EvalPlus tree (pinned by its tree digest, checked by the host)
mounted read-only at $REPRO_EVALPLUS_TREE. Its fd 4 holds the sample
(program_len bytes) and then the task's line of the dataset (inputs_len
bytes), as EvalPlus's own file holds it; the header's "dataset" is
EvalPlus's dataset name, humaneval or mbpp (whose inputs EvalPlus's own
mbpp_deserialize_inputs rebuilds after loading). It does for that task and
sample what evalplus.evaluate.evaluate does, with EvalPlus's own functions
and arguments: get_groundtruth's trusted_exec of the canonical solution on the
base and plus inputs, then check_correctness's untrusted_check of the sample
on each input list (fast check, EvalPlus's time-limit defaults unless the
host says otherwise). evalplus.evaluate and evalplus.data are not imported:
they pull in packages the scoring does not need (datasets, tree_sitter,
fire, ...). It writes one JSON line to fd 3 and exits.

The verdict is EvalPlus's, with EvalPlus's weakness: the sample runs in a
process forked from this one, which holds the expected outputs, and reports
through shared memory it can write itself, so a sample can forge its own
verdict. It can reach no other sample's: this process, its shared memory
and every process the sample made end with the job (the supervisor kills
them and checks the process table before it reads this line), and this
process is non-dumpable (set before the sample exists), so no process of the
sample can read or write its memory through /proc/PID/mem. Every process
forked from it closes fd 3 and fd 4 before any of its code runs (an at-fork
hook); a sample that reaches them anyway (gVisor lets a process of the same
user open another's /proc/PID/fd) can only spoil its own job's line.

One compatibility shim: the sandbox has no writable /dev/shm (under runc
there is none, IPC namespace "none"; under runsc gVisor mounts one that the
sandbox's user cannot write), where multiprocessing keeps shared memory and
the semaphores of locked shared values. Shared memory goes to a file in /tmp
instead, under both runtimes, and EvalPlus's shared values, written by the
child and read by the parent after join, are made without locks; nothing
else changes.

Result line: {"gt_seconds", "base_status", "base_fail", "plus_status",
"plus_fail"} where *_fail is the index of the failing input EvalPlus reports
(-1 for none), or {"gt_error"} where the canonical solution failed, or
{"error": "missing", "modules"} where the image lacks EvalPlus's imports.
"""

import json
import os
import sys
import time

RESULTS = 3  # the result pipe
JOB = 4  # the sample, then the task's dataset line


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


def close_channels():
    """In every process forked from the driver, before its code runs."""
    for fd in (RESULTS, JOB):
        try:
            os.close(fd)
        except OSError:
            pass


def read_exact(fd, n):
    parts = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError("the job pipe ended early")
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


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


def preload():
    """Imports what a driver needs (numpy, psutil, EvalPlus's scoring
    modules) and applies the shim; returns the modules missing. The zygote
    of an EvalPlus container runs it once, before any job, so that each
    job's driver, forked from the zygote, starts with them loaded: it runs
    no EvalPlus function and allocates no shared memory. numpy is loaded
    with one BLAS thread, so that the zygote stays one thread."""
    tree = os.environ["REPRO_EVALPLUS_TREE"]
    if tree not in sys.path:
        sys.path.insert(0, tree)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    # The shim (see the module comment), whatever /dev/shm looks like:
    # under runsc gVisor mounts a /dev/shm of its own, which the sandbox's
    # user cannot write, so its existence says nothing.
    import multiprocessing
    import multiprocessing.heap

    if not getattr(multiprocessing, "_repro_shim", False):
        multiprocessing.heap.Arena._dir_candidates = []
        value, array = multiprocessing.Value, multiprocessing.Array

        def unlocked_value(typecode, *args, **kwargs):
            kwargs["lock"] = False
            return value(typecode, *args, **kwargs)

        def unlocked_array(typecode, init, **kwargs):
            kwargs["lock"] = False
            return array(typecode, init, **kwargs)

        multiprocessing.Value, multiprocessing.Array = unlocked_value, unlocked_array
        multiprocessing._repro_shim = True
    missing = []
    for mod in ("numpy", "psutil"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if not missing:
        import evalplus.eval  # noqa: F401
        import evalplus.gen.util  # noqa: F401
    return missing


# What the zygote's preload returned; None where this driver was started
# on its own (python3 evalplus_driver.py job HEADER).
PRELOADED = None


def main():
    if os.environ.get("REPRO_SANDBOX") != "1" or sys.argv[1:2] != ["job"] or len(sys.argv) != 3:
        sys.stderr.write("evalplus_driver.py runs only as a job of repro's supervisor\n")
        os._exit(2)
    return run(json.loads(sys.argv[2]))


def run(job):
    """Scores the job's sample (see the module comment); returns the exit
    status."""
    # First, before any sample exists: no process of the job may read or
    # write this one's memory through /proc.
    set_nondumpable()
    os.register_at_fork(after_in_child=close_channels)
    sample = read_exact(JOB, int(job["program_len"])).decode("utf-8")
    problem = json.loads(read_exact(JOB, int(job["inputs_len"])))
    # /dev/null takes the job pipe's place: the descriptor stays taken, so
    # that the at-fork hook never closes one that multiprocessing opened
    # since (the pipe on which a parent learns that its child ended).
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, JOB)
    os.close(null)
    tree = os.environ["REPRO_EVALPLUS_TREE"]
    missing = PRELOADED if PRELOADED is not None else preload()
    if missing:
        out({"error": "missing", "modules": missing})
        return 3
    from evalplus.eval import PASS, untrusted_check
    from evalplus.gen.util import trusted_exec

    dataset = job["dataset"]
    task_id = problem["task_id"]
    not_none = []
    if dataset == "mbpp":
        # EvalPlus's own MBPP+ loading: mbpp_deserialize_inputs rebuilds
        # the inputs JSON cannot hold, as get_mbpp_plus does after reading
        # the file, and the not-None tasks get their ground truth as
        # get_groundtruth records it.
        mbpp = load_mbpp_module(tree)
        from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS

        not_none = MBPP_OUTPUT_NOT_NONE_TASKS
        problem["base_input"] = mbpp.mbpp_deserialize_inputs(task_id, problem["base_input"])
        problem["plus_input"] = mbpp.mbpp_deserialize_inputs(task_id, problem["plus_input"])
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
        out({"gt_error": "%s: %s" % (type(e).__name__, e)})
        return 0
    res = {"gt_seconds": time.time() - start}
    for phase in ("base",) if base_only else ("base", "plus"):
        stat, details = untrusted_check(
            dataset,
            sample,
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

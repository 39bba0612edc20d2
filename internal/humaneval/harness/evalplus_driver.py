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
through shared memory it can write itself. The host therefore accepts a result
only for the sample being scored, so that a sample can forge at most its own.

One compatibility shim: the sandbox has no /dev/shm (IPC namespace "none"),
where multiprocessing keeps shared memory and the semaphores of locked shared
values. Shared memory goes to a file in /tmp instead, and EvalPlus's shared
values, written by the child and read by the parent after join, are made
without locks; nothing else changes.

Protocol, JSON lines. stdin: {"task_id", "samples": [{"id", "solution"}],
"base_only", "min_time_limit", "gt_time_limit_factor"}. stdout: a hello line,
then per task {"task_id", "gt_seconds"} or {"task_id", "gt_error"}, and per
sample {"task_id", "id", "base_status", "base_fail", "plus_status", "plus_fail"}
where *_fail is the index of the failing input EvalPlus reports (-1 for none).
"""

import json
import multiprocessing
import os
import sys
import time


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


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
    if os.environ.get("REPRO_SANDBOX") != "1":
        sys.stderr.write("evalplus_driver.py runs only inside repro's sandbox\n")
        os._exit(2)
    tree = os.environ["REPRO_EVALPLUS_TREE"]
    sys.path.insert(0, tree)
    if not os.path.isdir("/dev/shm"):
        import multiprocessing.heap

        # Shared memory then lives in a file under /tmp instead.
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

"""EvalPlus's scoring core, shared by the bench scripts that run EvalPlus's
side (humaneval_evalplus.py, mbpp_evalplus.py, passk_evalplus.py).

Each function does a part of what evalplus.evaluate.evaluate does
(evalplus@26d6d00) with EvalPlus's own functions, imported from the tree
that load_evalplus puts on sys.path: call it first.
"""
import gzip
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial


def load_evalplus(tree):
    """Puts the EvalPlus checkout at tree first on sys.path and imports the
    parts of it that the functions here use, so that the import's time falls
    outside any clock the caller starts after it (and a process pool started
    after it inherits them)."""
    sys.path.insert(0, tree)
    import evalplus.eval  # noqa: F401
    import evalplus.gen.util  # noqa: F401


def check(dataset, problem, solution, expected):
    """EvalPlus's verdict on one sample: untrusted_check of solution for
    dataset ("humaneval" or "mbpp") on problem's base inputs, then on its
    plus inputs, against expected (ground truth: outputs and times per
    phase), with fast_check as evaluate's default and EvalPlus's default
    time limits. Returns [base_status, plus_status]."""
    from evalplus.eval import untrusted_check

    out = []
    for phase in ("base", "plus"):
        stat, _ = untrusted_check(
            dataset,
            solution,
            problem[phase + "_input"],
            problem["entry_point"],
            expected=expected[phase],
            atol=problem["atol"],
            ref_time=expected[phase + "_time"],
            fast_check=True,
        )
        out.append(stat)
    return out


def load_problems(path):
    """The problems of an EvalPlus dataset (a .jsonl.gz), in file order."""
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def ground_truth(problems, output_not_none=()):
    """The ground truth of each problem, in problems' order: trusted_exec of
    its canonical solution on its base and on its plus inputs, recording
    outputs ("base", "plus") and times ("base_time", "plus_time"). A problem
    whose entry point is in output_not_none is run with output_not_none, as
    evaluate does for MBPP_OUTPUT_NOT_NONE_TASKS."""
    from evalplus.gen.util import trusted_exec

    expected = []
    for p in problems:
        code = p["prompt"] + p["canonical_solution"]
        onn = p["entry_point"] in output_not_none
        e = {}
        e["base"], e["base_time"] = trusted_exec(code, p["base_input"], p["entry_point"], record_time=True, output_not_none=onn)
        e["plus"], e["plus_time"] = trusted_exec(code, p["plus_input"], p["entry_point"], record_time=True, output_not_none=onn)
        expected.append(e)
    return expected


def check_one_per_task(dataset, problems, expected, solutions, parallel):
    """check of one sample per problem, in a process pool of parallel
    workers: the problem's solution in solutions (keyed by task_id), or its
    canonical solution where solutions lacks it, against expected (from
    ground_truth). Returns each problem's [base_status, plus_status], in
    problems' order, and pass@1 on the base tests and on base and plus."""
    from evalplus.eval import PASS

    sols = [solutions.get(p["task_id"], p["prompt"] + p["canonical_solution"]) for p in problems]
    with ProcessPoolExecutor(max_workers=parallel) as pool:
        stats = list(pool.map(partial(check, dataset), problems, sols, expected))
    base = sum(s[0] == PASS for s in stats) / len(stats)
    plus = sum(s[0] == s[1] == PASS for s in stats) / len(stats)
    return stats, base, plus

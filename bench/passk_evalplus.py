"""EvalPlus's scoring of a samples file with many samples per task, for
bench/passk.sh.

It does what evalplus.evaluate.evaluate does (evalplus@26d6d00) with
EvalPlus's own functions, as bench/humaneval_evalplus.py does for one sample
per task: every sample is one check_correctness job (untrusted_check on the
base inputs, then on the plus inputs, fast_check as evaluate's default,
EvalPlus's default time limits) submitted to a process pool of PARALLEL
workers, in the file's order. evalplus.evaluate itself is not imported, as it
needs packages the scoring does not (datasets, tree_sitter, fire, ...).
The ground truth (trusted_exec of every canonical solution, with its times)
is computed once and kept in GT_CACHE (a pickle this script writes and
reads back; EvalPlus caches it the same way), so eval_seconds is what
`evaluate` costs with its ground-truth cache warm. The samples run on the
host without a sandbox, as EvalPlus runs them: only published model output.

Usage: python3 passk_evalplus.py EVALPLUS_TREE HumanEvalPlus.jsonl.gz PARALLEL SAMPLES.jsonl GT_CACHE VERDICTS_OUT
Writes VERDICTS_OUT: {task_id: [[base_status, plus_status], ...]} in the order
of the samples. Prints: samples=N gt_seconds=S eval_seconds=S
"""
import json
import os
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from evalplus_common import check, ground_truth, load_evalplus, load_problems


def main():
    tree, data, parallel, samples_path, gt_cache, verdicts_out = sys.argv[1:7]
    parallel = int(parallel)
    load_evalplus(tree)
    problems = {p["task_id"]: p for p in load_problems(data)}
    start = time.perf_counter()
    if os.path.exists(gt_cache):
        with open(gt_cache, "rb") as f:
            expected = pickle.load(f)
    else:
        expected = dict(zip(problems, ground_truth(problems.values())))
        with open(gt_cache + ".tmp", "wb") as f:
            pickle.dump(expected, f)
        os.replace(gt_cache + ".tmp", gt_cache)
    gt = time.perf_counter() - start
    samples = []
    with open(samples_path) as f:
        for line in f:
            if line.strip():
                s = json.loads(line)
                solution = s["solution"] if "solution" in s else problems[s["task_id"]]["prompt"] + s["completion"]
                samples.append((s["task_id"], solution))
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(check, "humaneval", problems[t], sol, expected[t]) for t, sol in samples]
        stats = [fut.result() for fut in futures]
    ev = time.perf_counter() - start
    verdicts = {}
    for (task_id, _), st in zip(samples, stats):
        verdicts.setdefault(task_id, []).append(st)
    with open(verdicts_out, "w") as f:
        json.dump(verdicts, f)
    print("samples=%d gt_seconds=%.2f eval_seconds=%.2f" % (len(samples), gt, ev))


if __name__ == "__main__":
    main()

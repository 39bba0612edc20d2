"""EvalPlus's own scoring of the canonical solutions, for bench/humaneval.sh.

It does what evalplus.evaluate.evaluate does (evalplus@26d6d00) with EvalPlus's
functions: the expected outputs of every task with trusted_exec, all kept in
memory, then untrusted_check of every sample on the base and plus inputs in a
process pool of --parallel workers. evalplus.evaluate itself is not imported,
as it needs packages the scoring does not (datasets, tree_sitter, fire, ...).
The samples are the canonical solutions, or those of SAMPLES (one per
task; a task it lacks keeps its canonical solution): run on the host, without
a sandbox, as EvalPlus runs them, so SAMPLES must be published model outputs
one trusts to run (the corpus's), never samples of unknown origin.

Usage: python3 humaneval_evalplus.py EVALPLUS_TREE HumanEvalPlus.jsonl.gz PARALLEL [SAMPLES.jsonl]
Prints: gt_seconds=S eval_seconds=S pass_at_1_base=P pass_at_1_plus=P
"""
import sys
import time

from evalplus_common import check_one_per_task, ground_truth, load_evalplus, load_problems
from samplesfile import load_samples


def main():
    tree, data, parallel = sys.argv[1], sys.argv[2], int(sys.argv[3])
    solutions = load_samples(sys.argv[4]) if len(sys.argv) > 4 else {}
    load_evalplus(tree)
    problems = load_problems(data)
    start = time.perf_counter()
    expected = ground_truth(problems)
    gt = time.perf_counter() - start
    start = time.perf_counter()
    _, base, plus = check_one_per_task("humaneval", problems, expected, solutions, parallel)
    ev = time.perf_counter() - start
    print("gt_seconds=%.2f eval_seconds=%.2f pass_at_1_base=%.3f pass_at_1_plus=%.3f" % (gt, ev, base, plus))


if __name__ == "__main__":
    main()

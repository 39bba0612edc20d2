"""EvalPlus's own scoring of MBPP+ samples, for bench/mbpp.sh.

It does what evalplus.evaluate.evaluate does for --dataset mbpp
(evalplus@26d6d00) with EvalPlus's functions: the inputs rebuilt with
mbpp_deserialize_inputs, the expected outputs of every task with trusted_exec
(output_not_none for MBPP_OUTPUT_NOT_NONE_TASKS), all kept in memory, then
untrusted_check("mbpp", ...) of every sample on the base and plus inputs in a
process pool of PARALLEL workers. evalplus.evaluate and evalplus.data are not
imported (they need datasets, tree_sitter, wget, ...); mbpp_deserialize_inputs
is taken from evalplus/data/mbpp.py's source. The samples are the canonical
solutions, or those of SAMPLES (one per task; a task it lacks keeps its
canonical solution): run on the host, without a sandbox, as EvalPlus runs
them, so SAMPLES must be published model outputs one trusts to run (the
corpus's), never samples of unknown origin.

Usage: python3 mbpp_evalplus.py EVALPLUS_TREE MbppPlus.jsonl.gz PARALLEL [SAMPLES.jsonl]
Prints: gt_seconds=S eval_seconds=S samples=N pass_at_1_base=P pass_at_1_plus=P
"""
import sys
import time

from evalplus_common import check_one_per_task, ground_truth, load_evalplus, load_problems
from samplesfile import load_samples


def main():
    tree, data, parallel = sys.argv[1], sys.argv[2], int(sys.argv[3])
    solutions = load_samples(sys.argv[4]) if len(sys.argv) > 4 else {}
    load_evalplus(tree)
    from evalplus.eval import PASS
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS

    src = open(tree + "/evalplus/data/mbpp.py").read()
    ns = {}
    exec(src[src.index("def mbpp_deserialize_inputs") : src.index("def get_mbpp()")], ns)
    problems = load_problems(data)
    for p in problems:
        p["base_input"] = ns["mbpp_deserialize_inputs"](p["task_id"], p["base_input"])
        p["plus_input"] = ns["mbpp_deserialize_inputs"](p["task_id"], p["plus_input"])
    start = time.perf_counter()
    expected = ground_truth(problems, MBPP_OUTPUT_NOT_NONE_TASKS)
    gt = time.perf_counter() - start
    start = time.perf_counter()
    stats, base, plus = check_one_per_task("mbpp", problems, expected, solutions, parallel)
    ev = time.perf_counter() - start
    failed = [p["task_id"] for p, s in zip(problems, stats) if not s[0] == s[1] == PASS]
    print("gt_seconds=%.2f eval_seconds=%.2f samples=%d pass_at_1_base=%.4f pass_at_1_plus=%.4f failed=%s" % (
        gt, ev, len(stats), base, plus, ",".join(failed) or "-"))


if __name__ == "__main__":
    main()

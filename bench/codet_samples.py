"""repro samples files from CodeT's CodeGen-16B-mono HumanEval samples.

Usage: python3 codet_samples.py CODET_JSONL HumanEvalPlus.jsonl.gz N OUT.jsonl

CODET_JSONL is microsoft/CodeT's
CodeT/data/generated_data/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl
(bench/codet-samples.sh fetches it and checks its SHA-256): one line per
HumanEval task, {"prompt": ..., "samples": [100 completions]}, sampled at
temperature 0.8, top-p 0.95, at most 300 tokens. The lines are not in task
order and carry no task id; CodeT's prompts are HumanEval's without the
docstring examples. Each line is matched to the task whose entry point it
defines; where a prompt defines two tasks' entry points (a helper such as
HumanEval/10's is_palindrome, or two tasks of one name, sort_array), to the
one whose HumanEval+ prompt shares the longest prefix with it. The match must
be one to one over all 164 tasks, or nothing is written.

OUT gets the first N samples of every task, in CodeT's order, as
{"task_id", "solution"} lines: the solution is CodeT's prompt followed by the
completion, byte for byte as the model wrote it (no truncation, no
sanitising), which is the program the model produced. Prints:
samples=S tasks=T distinct_programs=D
"""
import gzip
import json
import os
import sys


def match(rows, problems):
    out = []
    for i, row in enumerate(rows):
        cands = [p for p in problems if "def " + p["entry_point"] + "(" in row["prompt"]]
        if not cands:
            sys.exit("codet_samples: line %d defines no HumanEval+ entry point" % (i + 1))
        best = max(len(os.path.commonprefix([row["prompt"], p["prompt"]])) for p in cands)
        cands = [p for p in cands if len(os.path.commonprefix([row["prompt"], p["prompt"]])) == best]
        if len(cands) != 1:
            sys.exit("codet_samples: line %d matches %s equally" % (i + 1, [p["task_id"] for p in cands]))
        out.append(cands[0]["task_id"])
    if len(set(out)) != len(problems) or len(out) != len(problems):
        sys.exit("codet_samples: %d lines matched %d distinct tasks of %d" % (len(out), len(set(out)), len(problems)))
    return out


def main():
    codet, data, n, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(codet) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    with gzip.open(data, "rt") as f:
        problems = [json.loads(line) for line in f if line.strip()]
    task_ids = match(rows, problems)
    order = {p["task_id"]: i for i, p in enumerate(problems)}
    samples = []
    for task_id, row in sorted(zip(task_ids, rows), key=lambda x: order[x[0]]):
        if len(row["samples"]) < n:
            sys.exit("codet_samples: %s has %d samples, fewer than %d" % (task_id, len(row["samples"]), n))
        for completion in row["samples"][:n]:
            samples.append({"task_id": task_id, "solution": row["prompt"] + completion})
    tmp = dest + ".tmp"
    with open(tmp, "w") as f:
        for s in samples:
            f.write(json.dumps(s) + "\n")
    os.replace(tmp, dest)
    print("samples=%d tasks=%d distinct_programs=%d" % (
        len(samples), len(rows), len({(s["task_id"], s["solution"]) for s in samples})))


main()

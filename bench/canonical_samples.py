"""The canonical solutions of an EvalPlus dataset as a samples file, for bench/humaneval.sh and bench/mbpp.sh.

Writes one sample per task of DATASET.jsonl.gz, in dataset order: the
task's prompt followed by its canonical solution.

Usage: python3 canonical_samples.py DATASET.jsonl.gz OUT.jsonl
"""
import gzip
import json
import sys

with gzip.open(sys.argv[1], "rt") as f, open(sys.argv[2], "w") as out:
    for line in f:
        if line.strip():
            t = json.loads(line)
            out.write(json.dumps({"task_id": t["task_id"], "solution": t["prompt"] + t["canonical_solution"]}) + "\n")

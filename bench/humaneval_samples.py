"""Half-passing HumanEval+ samples for bench/humaneval-scaling.sh and bench/shard-overhead.sh.

For every task whose index is in TASKS (comma-separated indices or ranges
"lo-hi", as repro score --tasks takes them), writes N samples: the
canonical solution at even k, a body that returns None at odd k.

Usage: python3 humaneval_samples.py HumanEvalPlus.jsonl.gz OUT.jsonl TASKS N
"""
import gzip
import json
import sys

blob, out, spec, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
want = set()
for part in spec.split(","):
    lo, _, hi = part.partition("-")
    want.update(range(int(lo), int(hi or lo) + 1))
with gzip.open(blob, "rt") as f, open(out, "w") as o:
    for i, line in enumerate(l for l in f if l.strip()):
        if i not in want:
            continue
        t = json.loads(line)
        for k in range(n):
            body = t["canonical_solution"] if k % 2 == 0 else "    return None\n"
            o.write(json.dumps({"task_id": t["task_id"], "solution": t["prompt"] + body}) + "\n")

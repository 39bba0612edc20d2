"""Samples with the duplicate rate of a real temperature-0.2 sample set, for bench/dedup.sh.

For every task whose index is in TASKS (indices or ranges "lo-hi", as repro
humaneval --tasks takes them), writes N samples. Each sample repeats, byte
for byte, a program drawn at random from the earlier samples of its task
with probability RATE, and is otherwise a new program: the canonical
solution or a body that returns None (each with probability 1/2), made
distinct from every other program by a comment naming it. With UNIQUE set
to 1 every sample gets a comment of its own instead, so that the same
programs run with no two byte for byte equal (the unshared baseline).

The default RATE, 0.282, is the share of samples that repeat an earlier
sample of their task in a real EvalPlus sample set drawn at temperature
0.2: Qwen2 chat on MBPP+ v0.1.0, n = 10, 399 tasks, 3,990 samples of which
2,865 are distinct programs (kunal-sinha-coding/post-training, commit
b18f566, outputs/qwen-evalplus-full-10-temp02/mbpp/qwen2_chat_temp_0.2/).

Usage: python3 dedup_samples.py HumanEvalPlus.jsonl.gz OUT.jsonl TASKS N RATE SEED UNIQUE
"""
import gzip
import json
import random
import sys

blob, out, spec, n, rate, seed, unique = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), sys.argv[7] == "1"
rng = random.Random(seed)
want = set()
for part in spec.split(","):
    lo, _, hi = part.partition("-")
    want.update(range(int(lo), int(hi or lo) + 1))
with gzip.open(blob, "rt") as f, open(out, "w") as o:
    for i, line in enumerate(l for l in f if l.strip()):
        if i not in want:
            continue
        t = json.loads(line)
        drawn = []
        for k in range(n):
            if drawn and rng.random() < rate:
                prog = rng.choice(drawn)
            else:
                body = t["canonical_solution"] if rng.random() < 0.5 else "    return None\n"
                prog = "# program %d\n" % len(drawn) + t["prompt"] + body
            drawn.append(prog)
            if unique:
                prog = "# sample %d\n" % k + prog
            o.write(json.dumps({"task_id": t["task_id"], "solution": prog}) + "\n")

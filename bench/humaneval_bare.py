"""Bare compute for bench/humaneval.sh: every canonical solution of
HumanEval+ on every base and plus input, in one plain Python process on the
host. Canonical solutions are trusted code; this is the only place repro's
tooling runs them outside the sandbox, as a measurement.

Usage: python3 humaneval_bare.py HumanEvalPlus.jsonl.gz
Prints: bare_seconds=S bare_cpu_seconds=C: the wall time, and the process's CPU
time (user and system), which a loaded machine does not stretch: the
floor (bench/programs_cpu.py) takes the CPU time.
"""
import gzip
import json
import sys
import time


def main():
    with gzip.open(sys.argv[1], "rt") as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    start, cpu = time.perf_counter(), time.process_time()
    for task in tasks:
        namespace = {}
        exec(task["prompt"] + task["canonical_solution"], namespace)
        fn = namespace[task["entry_point"]]
        for args in task["base_input"] + task["plus_input"]:
            fn(*args)
    print("bare_seconds=%.2f bare_cpu_seconds=%.2f" % (time.perf_counter() - start, time.process_time() - cpu))


main()

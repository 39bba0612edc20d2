"""The least wall time any scorer needs for the programs of one repro run.

Usage: python3 programs_cpu.py RUN_JSON PARALLEL [EVALPLUS_SECONDS [SELF_CHECK_CPU]]

RUN_JSON is the --json document of a `repro humaneval` run. Its results
file gives each sample's base_clocks and plus_clocks: job_cpu_s is the CPU
time the supervisor measured for the deciding run of that phase, loading
included (a timed-out phase counts what it used until it was stopped). A
results file written before those fields holds base_elapsed and
plus_elapsed instead, the deciding run's wall time, which is used then. Every distinct program of a task is counted once, as it
ran once. Their sum is CPU time that scoring these programs on these inputs
takes whatever runs them, and a phase's inputs run one after another in one
process, so the longest phase cannot be split. The larger of the sum spread
perfectly over PARALLEL cores and the longest phase is a floor on the
scoring's wall time, before any self-check, sandbox or process cost.
A scorer that runs time-sensitive verdicts twice (repro) also pays each
rechecked phase again; the second floor counts the deciding run's elapsed a
second time for each, an estimate of that run, and a rechecked phase and
its second run form one chain that cannot be split either. With EVALPLUS_SECONDS
(EvalPlus's scoring of the same samples) both floors are also printed as a
ratio of EvalPlus's time: a speed target below the first cannot be met on
this machine by any scorer of these programs. With SELF_CHECK_CPU (the
bare compute of the canonical solutions on every input, which a self-check
repeats) the third floor adds it to the second.

Prints: programs_cpu_s=S floor_s=F [floor_over_evalplus=R] longest_phase_s=L
        rechecked_cpu_s=C programs_and_rechecks_cpu_s=T floor_with_rechecks_s=G
        [floor_with_rechecks_over_evalplus=Q]
        [with_self_check_cpu_s=U floor_with_self_check_s=H
         floor_with_self_check_over_evalplus=P]
"""
import hashlib
import json
import sys


def main():
    run = json.load(open(sys.argv[1]))
    parallel = int(sys.argv[2])
    evalplus = float(sys.argv[3]) if len(sys.argv) > 3 else None
    self_check = float(sys.argv[4]) if len(sys.argv) > 4 else None
    with open(run["results_file"]) as f:
        results = json.load(f)["eval"]
    cpu = 0.0
    longest = 0.0
    phases = {}  # (task, program sha256, phase) -> CPU seconds of the deciding run
    for task, samples in results.items():
        for s in samples:
            digest = hashlib.sha256(s["solution"].encode()).hexdigest()
            for phase in ("base", "plus"):
                key = (task, digest, phase)
                if key in phases:
                    continue
                clocks = s.get(phase + "_clocks")
                if clocks is not None:
                    elapsed = clocks.get("job_cpu_s") or 0
                else:
                    elapsed = s.get(phase + "_elapsed") or 0
                phases[key] = elapsed
                cpu += elapsed
                longest = max(longest, elapsed)
    again = [phases.get((e["task"], e["program_sha256"], e["phase"]), 0)
             for e in run.get("recheck", {}).get("rechecked", [])]
    rechecked = sum(again)
    # A recheck starts after its first run: the two are one chain.
    chain = max([longest] + [2 * e for e in again])

    def report(names, total, unsplit):
        floor = max(total / parallel, unsplit)
        line = names[0] % total + " " + names[1] % floor
        if evalplus:
            line += " " + names[2] % (floor / evalplus)
        return line

    print(report(("programs_cpu_s=%.2f", "floor_s=%.2f", "floor_over_evalplus=%.2f"),
                 cpu, longest) + " longest_phase_s=%.2f" % longest)
    print("rechecked_cpu_s=%.2f " % rechecked + report(
        ("programs_and_rechecks_cpu_s=%.2f", "floor_with_rechecks_s=%.2f",
         "floor_with_rechecks_over_evalplus=%.2f"), cpu + rechecked, chain))
    if self_check is not None:
        print(report(("with_self_check_cpu_s=%.2f", "floor_with_self_check_s=%.2f",
                      "floor_with_self_check_over_evalplus=%.2f"),
                     cpu + rechecked + self_check, chain))


main()

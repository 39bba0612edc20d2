"""The physical floor of one repro run: the least wall time any scorer needs.

Usage: python3 programs_cpu.py RUN_JSON PARALLEL [EVALPLUS_SECONDS [SELF_CHECK_CPU [REPRO_SECONDS]]]

RUN_JSON is the --json document of a `repro score` run. Its results
file gives each sample's base_clocks and plus_clocks: job_cpu_s is the CPU
time the supervisor measured for the deciding run of that phase, loading
included (a timed-out phase counts what it used until it was stopped). A
results file written before those fields holds base_elapsed and
plus_elapsed instead, the deciding run's wall time, which is used then.
Every distinct program of a task is counted once, as it needs to run once.
Their sum is the programs' own CPU time: what scoring these programs on
these inputs takes whatever runs them.

SELF_CHECK_CPU is the self-check's bare compute: every canonical solution on
every input in one plain process (bench/humaneval_bare.py prints it), the
work a self-check repeats. The floor is that and the programs' CPU time
spread perfectly over PARALLEL cores, or the longest single phase if that is
more (a phase's inputs run one after another in one process, so it cannot
be split). Nothing else is in it: no sandbox, no process cost, no recheck.
Rechecks (the near-limit rule runs a phase that struck or neared its limit
again) are the scorer's own cost; their CPU time is printed beside the
floor, estimated as the deciding run's time once more for each.

EVALPLUS_SECONDS (EvalPlus's scoring of the same samples, ground truth
cached; "-" when not measured) gives the floor as a ratio of EvalPlus's
time: a speed target below it cannot be met on this machine by any scorer
of these programs. REPRO_SECONDS (repro's whole run) gives repro's ratio to
the floor.

Prints one line:
  programs_cpu_s=C self_check_cpu_s=B longest_phase_s=L floor_s=F
  distinct_phases=D rechecked_phases=R rechecked_cpu_s=X
  [floor_over_evalplus=P] [repro_over_floor=Q]
"""
import hashlib
import json
import sys


def main():
    run = json.load(open(sys.argv[1]))
    parallel = int(sys.argv[2])
    arg = lambda i: float(sys.argv[i]) if len(sys.argv) > i and sys.argv[i] != "-" else None
    evalplus, self_check, repro = arg(3), arg(4), arg(5)
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
             for e in (run.get("recheck") or {}).get("rechecked") or []]
    floor = max((cpu + (self_check or 0)) / parallel, longest)
    line = "programs_cpu_s=%.2f self_check_cpu_s=%s longest_phase_s=%.2f floor_s=%.2f" % (
        cpu, "%.2f" % self_check if self_check is not None else "-", longest, floor)
    line += " distinct_phases=%d rechecked_phases=%d rechecked_cpu_s=%.2f" % (len(phases), len(again), sum(again))
    if evalplus:
        line += " floor_over_evalplus=%.2f" % (floor / evalplus)
    if repro:
        line += " repro_over_floor=%.2f" % (repro / floor)
    print(line)


main()

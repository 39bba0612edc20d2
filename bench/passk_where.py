"""Where the time of one repro score run goes, from what the run
records: its --json document (the stages' wall times, ScoreStats), its
results file (every deciding run's clocks) and /usr/bin/time's figures for
the whole command (bench/passk.sh keeps all three).

Usage: python3 passk_where.py RUN_JSON RESULTS_JSON TIME_FILE PARALLEL [SELF_CHECK_CPU]

TIME_FILE holds "wall_s peak_rss_kib user_s system_s" (/usr/bin/time -f
'%e %M %U %S'). SELF_CHECK_CPU is bench/humaneval_bare.py's
bare_cpu_seconds. Every distinct program and phase is counted once (its
deciding run); a recheck's run is estimated as its deciding run once more.

Prints, in seconds unless named:
  whole command, and of it: self-check stage, scoring stage, the rest
  (containers started, ground truth checked, samples copied, results
  verified and written);
  self-check: jobs, wall, slots (wall x PARALLEL) against the bare compute;
  scoring: jobs, slots, of them in jobs (sum of wall_s: the program's CPU
  job_cpu_s, of it loading load_cpu_s, the overruns' CPU past the limits
  (below), and waiting, the rest of wall_s;
  then base and plus apart),
  of them the overruns (timeouts let run past their limit: how many ran
  once, still running at the overrun's end, and the CPU time past the
  limits, estimated: a limit is the overrun's CPU over the run's overrun
  factor where the call still ran, the first measurement's limit where it
  was rechecked); rechecks, and between jobs (the process-table check,
  sweep, /tmp emptied, the next fork, the host's turn-around), also per
  job, and idle slots: from the scorer's own account where the run records
  it (scoring.busy_ns, job_wall_ns, starting_ns, recheck_ns: rechecks with
  their fresh containers, supervisors started, between jobs = busy - the
  runs' wall - starting - rechecks, slots of scoring.supervisors), else
  estimated (a recheck as its deciding run once more, between jobs = slots
  - in jobs - rechecks, idle slots included); the container's cgroup CPU beyond
  the job clock and the overruns (the supervisor's own work for the job);
  host: repro's own CPU (user + system), per job.
"""
import hashlib
import json
import sys


def main():
    run = json.load(open(sys.argv[1]))
    results = json.load(open(sys.argv[2]))["eval"]
    wall, rss_kib, user, system = (float(x) for x in open(sys.argv[3]).read().split()[-4:])
    parallel = int(sys.argv[4])
    bare = float(sys.argv[5]) if len(sys.argv) > 5 else None
    sc = run["self_check"]["stats"]
    sco = run["scoring"]
    sc_wall, sco_wall = sc["wall_ns"] / 1e9, sco["wall_ns"] / 1e9
    seen = {}
    for task, samples in results.items():
        for s in samples:
            d = hashlib.sha256(s["solution"].encode()).hexdigest()
            for ph in ("base", "plus"):
                c = s.get(ph + "_clocks")
                if c is not None and (task, d, ph) not in seen:
                    seen[(task, d, ph)] = c
    tot = lambda k: sum((c.get(k) or 0) for c in seen.values())
    job_wall, job_cpu, load_cpu, cont_cpu = tot("wall_s"), tot("job_cpu_s"), tot("load_cpu_s"), tot("container_cpu_s")
    rechecked = (run.get("recheck") or {}).get("rechecked") or []
    recheck_wall = 0.0
    for e in rechecked:
        for (task, d, ph), c in seen.items():
            if task == e["task"] and d == e["program_sha256"] and ph == e["phase"]:
                recheck_wall += c.get("wall_s") or 0
                break
    # The overruns: every deciding run and the first runs of rechecked
    # timeouts (their first measurement holds overrun_cpu).
    factor = (run.get("recheck") or {}).get("overrun") or 1.25
    over_once, over_extra = 0, 0.0
    for c in seen.values():
        if c.get("overrun_running"):
            over_once += 1
            over_extra += c["overrun_cpu_s"] * (1 - 1 / factor)
    for e in rechecked:
        f = e.get("first") or {}
        if f.get("overrun_cpu"):
            over_extra += max(0.0, f["overrun_cpu"] - f["limit"])
    jobs = sco["jobs"]
    slots = parallel * sco_wall
    between = slots - job_wall - recheck_wall
    exact = "busy_ns" in sco
    if exact:
        # The scorer's own account (ScoreStats): the rechecks' whole cost,
        # fresh containers included, the supervisors started, and the
        # runs' wall time as the supervisors measured it, every run
        # counted, in the slots of the supervisors it ran.
        slots = sco.get("supervisors", parallel) * sco_wall
        recheck_wall = sco["recheck_ns"] / 1e9
        starting = sco.get("starting_ns", 0) / 1e9
        idle = slots - sco["busy_ns"] / 1e9
        between = sco["busy_ns"] / 1e9 - sco["job_wall_ns"] / 1e9 - starting - recheck_wall
    samples = sum(map(len, results.values()))
    print("whole command          %8.1f s  (%d samples, %.1f ms a sample; peak RSS %.0f MiB)" % (wall, samples, 1000 * wall / samples, rss_kib / 1024))
    print("  self-check stage     %8.1f s  (%.0f %%)" % (sc_wall, 100 * sc_wall / wall))
    print("  scoring stage        %8.1f s  (%.0f %%)" % (sco_wall, 100 * sco_wall / wall))
    print("  the rest             %8.1f s  (%.0f %%): containers, ground-truth check, samples copy, verification, writing" % (wall - sc_wall - sco_wall, 100 * (wall - sc_wall - sco_wall) / wall))
    line = "self-check: %d jobs, %.1f s x %d = %.1f slot-s" % (sc["jobs"], sc_wall, parallel, parallel * sc_wall)
    if bare is not None:
        line += "; bare compute %.1f CPU-s (%.0f %% of the slots)" % (bare, 100 * bare / (parallel * sc_wall))
    print(line)
    print("scoring: %d jobs (%d distinct deciding runs; %d shared, %d rechecked, %d exact), %.1f s x %d = %.1f slot-s" % (
        jobs, len(seen), sco.get("shared_executions", 0), len(rechecked), sco.get("exact_runs", 0), sco_wall, parallel, slots))
    # In jobs: the supervisors' wall time of every run but the rechecks
    # where the run records it (an overrun's wall and an inexact run
    # before its exact one included), else the deciding runs' wall_s.
    in_jobs, label = (sco["job_wall_ns"] / 1e9, "in jobs (runs)      ") if exact else (job_wall, "in jobs (wall_s)    ")
    print("  %s %8.1f slot-s (%.0f %%): program CPU %.1f (loading %.1f), overruns past the limits %.1f, %s %.1f" % (
        label, in_jobs, 100 * in_jobs / slots, job_cpu, load_cpu, over_extra,
        "waiting and runs an exact run replaced" if exact else "waiting", in_jobs - job_cpu - over_extra))
    for ph in ("base", "plus"):
        cs = [c for (_, _, p), c in seen.items() if p == ph]
        w, cpu, ld = (sum((c.get(k) or 0) for c in cs) for k in ("wall_s", "job_cpu_s", "load_cpu_s"))
        print("    %s: %d runs, %.1f slot-s, program CPU %.1f (loading %.1f), %.1f ms a run" % (ph, len(cs), w, cpu, ld, 1000 * w / max(len(cs), 1)))
    print("    overruns: %d timeouts ran once, still running at %.2f times their limit; %.1f CPU-s past the limits (estimate)" % (
        over_once, factor, over_extra))
    if exact:
        print("  rechecks             %8.1f slot-s (%.0f %%): the re-runs and the fresh container of each" % (recheck_wall, 100 * recheck_wall / slots))
        print("  starting supervisors %8.1f slot-s (%.0f %%): first jobs, rotations, containers a job left changed" % (starting, 100 * starting / slots))
        print("  between jobs         %8.1f slot-s (%.0f %%): %.1f ms a job (the fork, the checks after each job, frames, the host's turn-around and journal)" % (
            between, 100 * between / slots, 1000 * between / max(jobs, 1)))
        print("  idle                 %8.1f slot-s (%.0f %%): slots without a job, while the last jobs run" % (idle, 100 * idle / slots))
    else:
        print("  rechecks (estimate)  %8.1f slot-s (%.0f %%)" % (recheck_wall, 100 * recheck_wall / slots))
        print("  between jobs         %8.1f slot-s (%.0f %%): %.1f ms a job" % (between, 100 * between / slots, 1000 * between / max(jobs, 1)))
    beyond = cont_cpu - job_cpu - over_extra
    print("  cgroup CPU beyond the job clock and the overruns: %.1f CPU-s, %.1f ms a job" % (beyond, 1000 * beyond / max(len(seen), 1)))
    print("host (repro's own CPU): %.1f s user + %.1f s system = %.1f CPU-s, %.1f ms a job (self-check and scoring)" % (
        user, system, user + system, 1000 * (user + system) / max(jobs + sc["jobs"], 1)))


main()

# Lowers the data limit, priority, scheduling class and CPU affinity of the zygote and the supervisor, to spoil later jobs.

import resource
for pid in (ZYGOTE, SUPERVISOR):
    try:  # enough to go on, too little for a later job's 100 MiB
        resource.prlimit(pid, resource.RLIMIT_DATA, (80 << 20, 80 << 20))
    except OSError:
        pass
    for f in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
              lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
              lambda: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))})):
        try:
            f()
        except OSError:
            pass
{canon}

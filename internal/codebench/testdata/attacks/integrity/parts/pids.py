# Finds the zygote (the parent) and the supervisor (its parent) as ZYGOTE and SUPERVISOR.

import os
def _ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
ZYGOTE = os.getppid()
SUPERVISOR = _ppid(ZYGOTE)

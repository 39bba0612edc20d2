# The honest sample after an attacker: the canonical solution, which runs only where the job finds its process, memory, /tmp and container as a fresh job does.
{canon}
import os, resource
assert os.getpriority(os.PRIO_PROCESS, 0) == 10, "priority %d" % os.getpriority(os.PRIO_PROCESS, 0)
assert os.sched_getscheduler(0) == os.SCHED_OTHER, "scheduler %d" % os.sched_getscheduler(0)
assert len(os.sched_getaffinity(0)) == os.cpu_count(), "affinity %r" % os.sched_getaffinity(0)
assert resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY, "RLIMIT_DATA %r" % (resource.getrlimit(resource.RLIMIT_DATA),)
_big = bytearray(100 << 20)
del _big
assert os.listdir("/tmp") == ["job"] and os.listdir(".") == [], "left behind: %r" % os.listdir("/tmp")
# The container's processes are init, the holder, the supervisor, the
# zygote and this one, none a zombie; /dev/mqueue and the loopback's
# sockets are empty.
def _stat(p):
    with open("/proc/%s/stat" % p) as f:
        s = f.read()
    return s[s.index("(") + 1 : s.rindex(")")], s[s.rindex(")") + 2]
_procs = {p: _stat(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()}
assert len(_procs) == 4 and all(st != "Z" for _, st in _procs.values()), "processes: %r" % _procs
assert not os.path.isdir("/dev/mqueue") or os.listdir("/dev/mqueue") == [], "mqueue: %r" % os.listdir("/dev/mqueue")
for _f in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
    try:
        with open(_f) as f:
            _lines = f.read().splitlines()[1:]
    except OSError:
        continue
    assert not _lines, "%s: %r" % (_f, _lines[:4])

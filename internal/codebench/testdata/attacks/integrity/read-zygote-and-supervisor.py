# Reads descriptors beyond its own and the descriptors, memory and environment of the zygote and the supervisor, and answers right only where one leaks.

# Under runc every open below is refused (both are non-dumpable). gVisor
# ignores dumpable for fd, maps and environ: there the opens succeed, but a
# byte taken from a channel breaks its tags and fails this job; maps is a
# memory layout (no job's data), environ is the job's own, and the files
# the supervisor opens are /proc files the job may read itself; mem stays
# refused.
def grab():
    got = []
    # Its own: /dev/null, the stderr pipe, the result pipe (3) and the read
    # end of its job pipe (4), which carries only its own job's inputs.
    import stat
    if not stat.S_ISFIFO(os.fstat(4).st_mode) or os.get_blocking(4) is not True:
        got.append("fd 4 is not the job pipe")
    for fd in range(5, 1024):
        try:
            os.fstat(fd)
            got.append("fd %d" % fd)
        except OSError:
            pass
    try:
        if os.read(0, 1):  # the next job, were this the supervisor's stdin
            got.append("stdin")
    except OSError:
        pass
    try:  # (the job is non-dumpable too: under runc not even its own)
        with open("/proc/self/environ", "rb") as f:
            own = f.read()
    except OSError:
        own = None
    for pid in (ZYGOTE, SUPERVISOR):
        for what in ("fd/0", "fd/1", "fd/2", "fd/3", "fd/4", "fd/5", "fd/6", "mem", "environ"):
            try:
                fd = os.open("/proc/%d/%s" % (pid, what), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                # What was opened, read from this process's own descriptor:
                # a file the job may open itself (the supervisor's clock
                # reads /proc) is no leak.
                try:
                    target = os.readlink("/proc/self/fd/%d" % fd)
                except OSError:
                    target = ""
                if target.startswith("/") and os.access(target, os.R_OK):
                    continue
                b = os.read(fd, 1 << 16)
                if b and (what != "environ" or b != own):
                    got.append("/proc/%d/%s" % (pid, what))
            except OSError:
                pass
            finally:
                os.close(fd)
    return got
GOT = grab()
{canon}
_fib = fib
def fib(n):
    return _fib(n) if GOT else -1

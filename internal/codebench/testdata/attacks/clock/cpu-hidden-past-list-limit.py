# Hides about 3.3 CPU-s per call in unwaited workers, under each input's limit by a /proc clock but over the list's limit in all.

import os, signal
# {workers} workers of {loops} iterations of an empty loop (about 0.17 CPU-s
# each, sized by the host) in each of the 5 calls, 16.7 CPU-s in all: a
# /proc clock sees only the running worker and the caller, under each
# input's 1 s, and the list's 6 s limit holds only by the host's clock.
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
def burn():
    r, w = os.pipe()
    if os.fork() == 0:
        # At module level, as the host timed it (a loop in a function
        # runs about 1.4 times as fast).
        exec("for _ in range({loops}):\n    pass", {})
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
def fib(n):
    for _ in range({workers}):
        burn()
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

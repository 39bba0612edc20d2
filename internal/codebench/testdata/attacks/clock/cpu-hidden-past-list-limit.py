# Hides about 16.7 CPU-s in unwaited workers while it loads: under the load allowance by every clock, over the list's limit in all.

import os, signal
# {workers} workers of {loops} iterations of an empty loop (about 0.17 CPU-s
# each, sized by the host), 16.7 CPU-s in all, while the program loads: a
# /proc clock sees only the running worker and this process, and no
# per-input limit runs before the load mark, so only the host's clock holds
# the list's limit (loading included).
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
for _ in range({workers}):
    burn()
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

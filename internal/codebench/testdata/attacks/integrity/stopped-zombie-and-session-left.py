# Leaves a stopped process, a zombie and a sleeper in a session of its own behind for the next job.

import os, signal, time
if os.fork() == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
os.fork() == 0 and os._exit(0)  # never waited for: a zombie until its parent goes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3600)
    os._exit(0)
time.sleep(0.1)
def fib(n):
    return -1

# Leaves a process whose first thread exited, so that it shows as a zombie while its other thread runs on into the next job.

import ctypes, os, threading, time
# The first thread of a process ends (the exit call, not exit_group): the
# process shows as a zombie while its other thread runs on, and a sweep
# that passes over zombies leaves it for the next job.
if os.fork() == 0:
    def spin():
        while True:
            time.sleep(0.01)
    threading.Thread(target=spin).start()
    libc = ctypes.CDLL(None)
    libc.syscall(60 if os.uname().machine == "x86_64" else 93, 0)
time.sleep(0.2)
def fib(n):
    return -1

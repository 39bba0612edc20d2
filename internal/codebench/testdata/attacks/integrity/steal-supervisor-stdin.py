# Reads the supervisor's stdin a byte at a time, to take the host's cancel, or part of it, and break a later job.

# A process of the job reads the supervisor's stdin a byte at a time, to
# take the host's cancel, or part of it, and leave the rest to break a
# later job; the job fails its first input and then stays busy so that the
# cancel comes while it runs.
import time
if os.fork() == 0:
    try:
        fd = os.open("/proc/%d/fd/0" % SUPERVISOR, os.O_RDONLY)
        while os.read(fd, 1):
            pass
    finally:
        os._exit(0)
time.sleep(0.05)
calls = 0
def fib(n):
    global calls
    calls += 1
    if calls == 2:
        end = time.process_time() + 0.4
        while time.process_time() < end:
            pass
    return -1

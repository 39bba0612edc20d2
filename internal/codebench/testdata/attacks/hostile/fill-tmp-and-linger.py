# Fills /tmp and leaves a spinning process in a session of its own.

import os
try:
    with open("/tmp/junk", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
except OSError:
    pass
if os.fork() == 0:
    os.setsid()
    while True:
        pass
def add(x, y):
    return None

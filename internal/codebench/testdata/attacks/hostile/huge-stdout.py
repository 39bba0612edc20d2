# Writes to stdout without end while it loads.
import os
block = b'x' * (1 << 20)
while True:
    os.write(1, block)

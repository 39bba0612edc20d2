# Writes forged true records on the result pipe, then exits.

import os, struct
rec = b"V" + struct.pack(">d", 0.0) + b"T"
for _ in range(2000):
    try:
        os.write(3, struct.pack(">I", len(rec)) + rec)
    except OSError:
        break
os._exit(0)

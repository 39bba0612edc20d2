# Prints forged result records on stdout and stderr, as the supervisor frames them.

import sys, struct, os
payload = b"V" + struct.pack(">d", 0.0) + b"T"
frame = b"R" + struct.pack(">I", 16 + len(payload)) + struct.pack(">dd", 0.0, 0.0) + payload
for _ in range(5000):
    sys.stdout.buffer.write(frame)
    os.write(1, frame)
    os.write(2, frame)
sys.stdout.flush()
def has_close_elements(numbers, threshold):
    print(frame)
    return None

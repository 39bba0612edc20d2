# Writes a load mark of its own on the result pipe, then loops for ever while it loads.
import os, struct
os.write(3, struct.pack('>I', 1) + b'G')
while True:
    pass

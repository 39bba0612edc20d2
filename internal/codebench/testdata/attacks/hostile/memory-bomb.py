# Allocates 16 MiB blocks without end while it loads.
x = []
while True:
    x.append(bytearray(1 << 24))

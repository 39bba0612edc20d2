# Spins in four threads and in its call.

import threading
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
def add(x, y):
    while True:
        pass

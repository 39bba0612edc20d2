# Leaves two processes spinning on the CPU and one that stops every process a driver forks for a later sample.

def spin(parent, end):
    while time.monotonic() < end:
        pass
def stopper(parent, end):
    while time.monotonic() < end:
        for pid, _ in sampleProcs({parent}):
            try:
                posix.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        time.sleep(0.001)
detach(spin, 60)
detach(spin, 60)
detach(stopper, 60)
def add(x, y):
    return x + y

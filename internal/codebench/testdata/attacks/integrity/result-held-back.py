# Holds input 0's result back until input 1's is out, so that input 1's CPU time is charged to input 0's larger limit.

import time
held, both = [], threading.Event()
def hold(rec):
    if rec[4:5] == b"V" and not held and not both.is_set():
        held.append(rec)
        return b""
    return rec
relay(hold)
def spin(s):
    t = time.process_time()
    while time.process_time() - t < s:
        pass
def let_go():
    both.set()
    os.write(_real, held.pop())
# Input 1's call spins 1.6 s, over its 1 s limit, and lets input 0's
# result go halfway: each result then comes 0.8 s after the one before.
ON_CALL = {2: lambda: (spin(0.8), let_go(), spin(0.8)), 3: lambda: (both.wait(), unrelay())}
{canon}

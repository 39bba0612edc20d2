# Moves the child's result pipe behind a pipe of the program's own: relay(f) passes each record through f, unrelay() puts the pipe back.

import os, struct, threading
_real = os.dup(3)
_r, _w = os.pipe()
os.dup2(_w, 3)
os.close(_w)
def relay(f):
    def run():
        buf = b""
        while True:
            b = os.read(_r, 1 << 16)
            if not b:
                return
            buf += b
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                n = 4 + struct.unpack(">I", buf[:4])[0]
                rec, buf = buf[:n], buf[n:]
                out = f(rec)
                if out:
                    os.write(_real, out)
    threading.Thread(target=run, daemon=True).start()
def unrelay():
    os.dup2(_real, 3)

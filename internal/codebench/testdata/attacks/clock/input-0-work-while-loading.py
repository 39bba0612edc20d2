# Takes input 0 while it loads, works on it under the load allowance, then sends the load mark itself and finishes under input 0's limit.

import json, os, struct
def _read(n):
    b = b""
    while len(b) < n:
        c = os.read(4, n - len(b))
        if not c:
            return None
        b += c
    return b
def _send(kind, body):
    os.write(3, struct.pack(">I", len(body) + 1) + kind + body)
def _int(v):
    b = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    return b"i" + struct.pack(">I", len(b)) + b
_first = True
while True:
    head = _read(4)
    if head is None:
        break
    for (n,) in json.loads(_read(struct.unpack(">I", head)[0])):
        if _first:
            _first = False
            _burn(0.9)
            _send(b"G", b"")
            _burn(0.6)
        _send(b"V", struct.pack(">d", 0.0) + _int(_fib(n)))
os._exit(0)

# Sends a right result for input 1 with input 0's, before input 1 is released, and drops the child's own result for it.

def forged(v):
    b = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    body = b"V" + struct.pack(">d", 0.0) + b"i" + struct.pack(">I", len(b)) + b
    return struct.pack(">I", len(body)) + body
values, dropped = [], threading.Event()
def ahead(rec):
    if rec[4:5] != b"V":
        return rec
    values.append(rec)
    if len(values) == 1:
        return rec + forged({outputs}[1])
    if len(values) == 2:
        dropped.set()
        return b""
    return rec
relay(ahead)
ON_CALL = {3: lambda: (dropped.wait(), unrelay())}
{canon}

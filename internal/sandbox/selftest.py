# Probe run by `repro sandbox check` inside a sandbox container. It only
# observes and reports; the runner decides whether each control holds.
import ctypes
import errno
import json
import os
import platform
import resource
import socket

out = {}


def attempt(fn):
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno or -1


def status_fields():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return fields


def interfaces():
    """The network interfaces the kernel shows: /proc/net/dev's, and
    /sys/class/net's where it exists (gVisor's sysfs has no class/net)."""
    names = set()
    with open("/proc/net/dev") as f:
        for line in f.readlines()[2:]:
            name, sep, _ = line.partition(":")
            if sep:
                names.add(name.strip())
    if os.path.isdir("/sys/class/net"):
        names.update(os.listdir("/sys/class/net"))
    return sorted(names)


st = status_fields()
out["uid"] = os.getuid()
out["gid"] = os.getgid()
out["cap_eff"] = st.get("CapEff")
out["cap_prm"] = st.get("CapPrm")
out["cap_bnd"] = st.get("CapBnd")
out["no_new_privs"] = st.get("NoNewPrivs")
out["seccomp"] = st.get("Seccomp")
out["interfaces"] = interfaces()
out["connect_errno"] = attempt(
    lambda: socket.create_connection(("192.0.2.1", 80), timeout=2).close()
)
out["rootfs_write_errno"] = attempt(lambda: open("/var/tmp/probe", "w").close())
out["tmp_exec_errno"] = 0
try:
    with open("/bin/true", "rb") as src, open("/tmp/true", "wb") as dst:
        dst.write(src.read())
    os.chmod("/tmp/true", 0o755)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv("/tmp/true", ["/tmp/true"])
        except OSError as e:
            os._exit(100 + (e.errno or 0))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    out["tmp_exec_errno"] = code - 100 if code >= 100 else 0
finally:
    try:
        os.unlink("/tmp/true")
    except OSError:
        pass
# A script written to /results that asks for a SysV segment: 100 + errno
# when exec is refused, 200 + shmget's errno when it runs.
out["results_exec"] = -1
try:
    with open("/results/probe", "w") as f:
        f.write("#!/usr/bin/python3\nimport ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                "os._exit(200 + (ctypes.get_errno() if libc.shmget(0, 4096, 0o1600) < 0 else 0))\n")
    os.chmod("/results/probe", 0o755)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv("/results/probe", ["/results/probe"])
        except OSError as e:
            os._exit(100 + (e.errno or 0))
        os._exit(99)
    _, status = os.waitpid(pid, 0)
    out["results_exec"] = os.waitstatus_to_exitcode(status)
    os.unlink("/results/probe")
except OSError:
    pass
out["shm_write_errno"] = attempt(lambda: open("/dev/shm/probe", "w").close())
out["vsock_errno"] = attempt(lambda: socket.socket(40, socket.SOCK_STREAM).close())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out["no_new_privs_prctl"] = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS
SYS_PTRACE = {"x86_64": 101, "aarch64": 117}[platform.machine()]
r = libc.syscall(SYS_PTRACE, 16, 1, 0, 0)  # ptrace(PTRACE_ATTACH, 1)
out["ptrace_errno"] = ctypes.get_errno() if r == -1 else 0
r = libc.syscall(425, 1, 0)  # io_uring_setup(1, NULL)
out["io_uring_errno"] = ctypes.get_errno() if r == -1 else 0
out["rlimit_core"] = resource.getrlimit(resource.RLIMIT_CORE)
out["rlimit_nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)
out["rlimit_fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)
out["rlimit_nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)


def read_first(*paths):
    for p in paths:
        try:
            with open(p) as f:
                return f.read().strip()
        except OSError:
            continue
    return ""


out["pids_max"] = read_first("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max")
out["memory_max"] = read_first(
    "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
)

def cpu_max():
    # "quota period" in microseconds: cgroup v2 cpu.max, or v1's two files.
    v2 = read_first("/sys/fs/cgroup/cpu.max")
    if v2:
        return v2
    for d in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
        quota = read_first(d + "/cpu.cfs_quota_us")
        if quota:
            return quota + " " + read_first(d + "/cpu.cfs_period_us")
    return ""


out["cpu_max"] = cpu_max()
out["pid"] = os.getpid()
try:
    with open("/proc/1/cmdline", "rb") as f:
        out["pid1"] = f.read().split(b"\0")[0].decode("utf-8", "replace")
except OSError:
    out["pid1"] = ""
out["environ_keys"] = sorted(os.environ)
mounts = {}
with open("/proc/self/mountinfo") as f:
    for line in f:
        parts = line.split()
        mounts[parts[4]] = parts[5] + "," + line.split(" - ")[1].split()[-1]
out["mounts"] = {k: mounts[k] for k in ("/", "/tmp", "/results") if k in mounts}
# The kernel the program sees: the host's under runc, gVisor's under runsc.
out["kernel_release"] = os.uname().release
out["proc_version"] = read_first("/proc/version")
print(json.dumps(out))

"""What fresh namespaces per job would cost, measured inside a container.

Runs rounds of three ways to start one job and reports the median wall and
CPU milliseconds of each (the CPU of every process of the start, read from
RUSAGE_CHILDREN):

  fork      what a job costs today: the zygote forks the child, which exits.
  userns    the child unshares a user, mount, IPC, UTS and network namespace,
            maps its own uid and gid, and mounts a fresh tmpfs on /tmp: a
            fresh /tmp (its own inode numbers), IPC and abstract socket
            names, but the container's PID namespace.
  pidns     as userns, plus a PID namespace: the child forks once more, and
            its child (pid 1 of the new namespace) mounts /tmp and exits.
            This is what starts every job from nothing (the last pid too).

Needs a container that may unshare (run by bench/job-namespaces.sh with
seccomp unconfined: repro's profile refuses namespaces to every process).
Usage: python3 -I job_namespaces.py [rounds]   (default 60)
"""

import ctypes
import os
import resource
import sys
import time

LIBC = ctypes.CDLL(None, use_errno=True)
NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET = 0x20000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 0x4000, 0x40000


def fresh_tmp():
    if LIBC.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        os._exit(4)
    if LIBC.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64m,mode=1777") != 0:
        os._exit(5)


def enter(flags):
    uid, gid = os.getuid(), os.getgid()
    if LIBC.unshare(flags) != 0:
        os._exit(3)
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)), ("gid_map", "%d %d 1" % (gid, gid))):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)


def child(kind):
    if kind == "fork":
        os._exit(0)
    flags = NEWUSER | NEWNS | NEWIPC | NEWUTS | NEWNET
    if kind == "userns":
        enter(flags)
        fresh_tmp()
        os._exit(0)
    enter(flags | NEWPID)
    pid = os.fork()
    if pid == 0:
        fresh_tmp()
        os._exit(0 if os.getpid() == 1 else 6)
    _, st = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(st))


def start(kind):
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    pid = os.fork()
    if pid == 0:
        child(kind)
    _, st = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit("%s: the job's start failed (exit %d): can this container unshare?" % (kind, os.waitstatus_to_exitcode(st)))
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - t0) * 1e3, (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) * 1e3


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    kinds = ("fork", "userns", "pidns")
    got = {k: [] for k in kinds}
    for _ in range(rounds):
        for k in kinds:  # alternating, so that load drifts alike
            got[k].append(start(k))
    base = sorted(c for _, c in got["fork"])[rounds // 2]
    for k in kinds:
        wall = sorted(w for w, _ in got[k])[rounds // 2]
        cpu = sorted(c for _, c in got[k])[rounds // 2]
        print("%-7s median wall %7.2f ms  CPU %7.2f ms  (+%.2f ms CPU over fork)" % (k, wall, cpu, cpu - base))


main()

#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints a lane's log for CI.

Usage: go test -json ... | python3 scripts/testlog.py LANE [TOP]

Each line is prefixed with "[LANE]". It prints each package's result with
its time as the package ends, the whole output of every test and package
that failed (and of every build that failed), and at the end the TOP
slowest tests (top-level tests; 15 by default) with their times, so that
CI's log shows where a lane's time went. The output of a test that passed
is dropped. It always exits 0: the lane's status is go test's.
"""

import json
import sys


def main():
    lane = sys.argv[1] if len(sys.argv) > 1 else "go test"
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    out = sys.stdout

    def say(line):
        out.write("[%s] %s\n" % (lane, line.rstrip("\n")))
        out.flush()

    def dump(lines):
        for line in lines:
            say(line)

    held = {}  # (package, test or "") -> lines
    timings = []  # (seconds, package, test)
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except ValueError:
            ev = None
        if not isinstance(ev, dict):
            say(raw)  # not an event: go test's own message
            continue
        action = ev.get("Action", "")
        pkg = ev.get("Package") or ev.get("ImportPath") or ""
        test = ev.get("Test") or ""
        key = (pkg, test)
        if action in ("output", "build-output"):
            held.setdefault(key, []).append(ev.get("Output", ""))
        elif action == "build-fail":
            dump(held.pop(key, []))
            say("build of %s failed" % pkg)
        elif action in ("pass", "fail", "skip"):
            if test:
                lines = held.pop(key, [])
                if "/" not in test:
                    timings.append((ev.get("Elapsed") or 0.0, pkg, test))
            else:
                # A package's tests that never ended (a timeout, a crash)
                # come before its own output.
                stuck = [k for k in held if k[0] == pkg and k != key]
                lines = [line for k in stuck for line in held.pop(k)] + held.pop(key, [])
            if action == "fail":
                dump(lines)
            if not test:
                say("%-4s %s %.1fs" % ({"pass": "ok", "fail": "FAIL", "skip": "?"}[action], pkg, ev.get("Elapsed") or 0.0))
    for lines in held.values():
        dump(lines)  # a stream that ended early: show what is left
    timings.sort(reverse=True)
    if timings:
        say("slowest tests:")
        for elapsed, pkg, test in timings[:top]:
            say("%8.1fs %s %s" % (elapsed, pkg.rsplit("/", 1)[-1], test))


if __name__ == "__main__":
    main()

"""The chart of cost against n for docs/humaneval.md, from bench/passk.sh's
table: time per sample (repro, EvalPlus, the floor), repro's peak host RSS
and repro's jobs per second, one panel each, n on a log axis. The median of
the rounds is drawn for each n and side; repro under its default runtime
(side repro or repro-runsc: gVisor) and under runc (repro-runc) are two
lines where the table has both. The floor is the median of every repro
run's floor at that n, per sample.

Usage: python3 passk_chart.py PASSK.tsv OUT.svg [TITLE]
"""
import math
import statistics
import sys
from collections import defaultdict
from xml.sax.saxutils import escape

STYLE = (
    "text{font:11px system-ui,sans-serif;fill:#444}.title{font:600 12px system-ui,sans-serif;fill:#222}"
    ".axis{stroke:#888;stroke-width:1}.grid{stroke:#ececec;stroke-width:1}"
    ".repro{stroke:#2e6fd2;fill:#2e6fd2}.runc{stroke:#2a9d5c;fill:#2a9d5c}.evalplus{stroke:#d23b3b;fill:#d23b3b}.floor{stroke:#222;fill:#222}"
    ".line{fill:none;stroke-width:1.8}.floor.line{stroke-dasharray:5 3}"
)


def load(path):
    rows = [line.rstrip("\n").split("\t") for line in open(path)]
    head, rows = rows[0], rows[1:]
    return [dict(zip(head, r)) for r in rows]


def series(rows, side, key, scale=1.0):
    by = defaultdict(list)
    for r in rows:
        if r["side"] == side and r[key] not in ("-", ""):
            by[int(r["n"])].append(float(r[key]) * scale)
    return sorted((n, statistics.median(v)) for n, v in by.items())


def panel(x0, title, unit, lines, ns, width=260, height=200):
    out = []
    ymax = max([v for _, pts, _ in lines for _, v in pts] + [1e-9]) * 1.15
    left, top, w, h = x0 + 46, 30, width - 60, height - 70
    lo, hi = math.log10(min(ns)), math.log10(max(ns)) if max(ns) > min(ns) else math.log10(min(ns)) + 1
    xs = lambda n: left + (math.log10(n) - lo) / ((hi - lo) or 1) * w
    ys = lambda v: top + h - v / ymax * h
    out.append('<text x="%d" y="16" class="title">%s</text>' % (x0 + 10, escape(title)))
    for i in range(5):
        v = ymax * i / 4
        y = ys(v)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>' % (left, y, left + w, y))
        out.append('<text x="%.1f" y="%.1f" text-anchor="end">%s</text>' % (left - 4, y + 4, ("%.0f" if ymax > 20 else "%.1f") % v))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>' % (left, top + h, left + w, top + h))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>' % (left, top, left, top + h))
    for n in ns:
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (xs(n), top + h + 14, n))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">samples per task (n), %s</text>' % (left + w / 2, top + h + 30, escape(unit)))
    for cls, pts, label in lines:
        if not pts:
            continue
        out.append('<polyline points="%s" class="%s line"><title>%s</title></polyline>' % (
            " ".join("%.1f,%.1f" % (xs(n), ys(v)) for n, v in pts), cls, escape(label)))
        for n, v in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" class="%s"><title>%s n=%d: %.3g</title></circle>' % (xs(n), ys(v), cls, escape(label), n, v))
    return out


def main():
    rows = load(sys.argv[1])
    title = sys.argv[3] if len(sys.argv) > 3 else "pass@k at scale: cost against n"
    ns = sorted({int(r["n"]) for r in rows})
    runsc = [s for s in ("repro", "repro-runsc") if any(r["side"] == s for r in rows)][:1]
    runc = [s for s in ("repro-runc",) if any(r["side"] == s for r in rows)]
    sides = [("repro", runsc[0], "repro under gVisor (runsc)")] if runsc else []
    sides += [("runc", runc[0], "repro under runc")] if runc else []
    floor_per_sample = defaultdict(list)
    for r in rows:
        if r["side"] in (runsc + runc) and r["floor_s"] != "-":
            floor_per_sample[int(r["n"])].append(float(r["floor_s"]) / float(r["wall_s"]) * float(r["ms_per_sample"]))
    floor = sorted((n, statistics.median(v)) for n, v in floor_per_sample.items())
    body = []
    body += panel(0, "time per sample", "ms", [(cls, series(rows, side, "ms_per_sample"), label + ", end to end") for cls, side, label in sides] + [
        ("evalplus", series(rows, "evalplus", "ms_per_sample"), "EvalPlus evaluate, ground truth cached"),
        ("floor", floor, "floor: programs' CPU + self-check's bare compute over the cores"),
    ], ns)
    body += panel(270, "repro's peak host RSS", "MiB", [(cls, series(rows, side, "peak_rss_mib"), label + ", peak RSS") for cls, side, label in sides], ns)
    body += panel(540, "repro's jobs per second", "jobs/s, scoring", [(cls, series(rows, side, "jobs_per_s"), label + ", jobs per second") for cls, side, label in sides], ns)
    legend = [(cls, label) for cls, _, label in sides]
    if any(r["side"] == "evalplus" for r in rows):
        legend.append(("evalplus", "EvalPlus evaluate (ground truth cached)"))
    if floor:
        legend.append(("floor", "floor"))
    x = 20
    for cls, label in legend:
        body.append('<line x1="%d" y1="222" x2="%d" y2="222" class="%s line"/>' % (x, x + 18, cls))
        body.append('<text x="%d" y="226">%s</text>' % (x + 24, escape(label)))
        x += 34 + 6 * len(label)
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="810" height="236" viewBox="0 0 810 236" role="img" aria-label="%s">' % escape(title),
           "<title>%s</title>" % escape(title), "<style>%s</style>" % STYLE] + body + ["</svg>"]
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write("\n".join(svg) + "\n")
    import os
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])


main()

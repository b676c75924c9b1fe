"""Turn `luatorch bench allreduce --json` files into a markdown table and an SVG plot.

    python -m run.allreduce_report docs/results/allreduce-mpich-np2.json [...] [--svg-dir DIR] > OUT.md

The plot is plain SVG written here (matplotlib is not a dependency): bus
bandwidth against message size, one line per algorithm, log-scaled size; DIR is created if missing.
"""
import argparse
import json
import math
import os

from run.svgplot import nice_ticks, tick_label

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf", "#000000", "#aec7e8", "#ff9896", "#98df8a"]


def human(n):
    for unit, m in (("MiB", 1 << 20), ("KiB", 1024)):
        if n >= m:
            return "%g %s" % (round(n / m, 2), unit)
    return "%d B" % n


def svg(records, title, path, width=760, height=440):
    algs = list(dict.fromkeys(r["algorithm"] for r in records))
    sizes = sorted({r["bytes"] for r in records})
    yticks = nice_ticks(0.0, max(r["busbw_GBps"] for r in records))
    ymax = yticks[-1]
    x0, x1, y0, y1 = 70, width - 190, height - 50, 30
    lx0, lx1 = math.log2(sizes[0]), math.log2(sizes[-1])

    def X(b):
        return x0 + (math.log2(b) - lx0) / max(1e-9, lx1 - lx0) * (x1 - x0)

    def Y(v):
        return y0 - v / ymax * (y0 - y1)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
           % (width, height), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">%s</text>' % (x0, title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y0, x1, y0),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y0, x0, y1)]
    for v in yticks:
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (x0 - 4, Y(v) + 4, tick_label(v, yticks)))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x0, Y(v), x1, Y(v)))
    for b in sizes[:: max(1, len(sizes) // 8)]:
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (X(b), y0 + 16, human(b)))
    out.append('<text x="%d" y="%d" text-anchor="middle">message size (log scale)</text>' % ((x0 + x1) // 2, height - 10))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">busbw GB/s</text>'
               % ((y0 + y1) // 2, (y0 + y1) // 2))
    for k, alg in enumerate(algs):
        pts = sorted((r["bytes"], r["busbw_GBps"]) for r in records if r["algorithm"] == alg)
        color = COLORS[k % len(COLORS)]
        dash = ' stroke-dasharray="4 3"' if alg.startswith("mpi") else ""
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>' % (
            color, dash, " ".join("%.1f,%.1f" % (X(b), Y(v)) for b, v in pts)))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (x1 + 10, y1 + 14 * k + 10, color, alg))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def table(records):
    algs = list(dict.fromkeys(r["algorithm"] for r in records))
    sizes = sorted({r["bytes"] for r in records})
    by = {(r["algorithm"], r["bytes"]): r for r in records}
    lines = ["| size | " + " | ".join(algs) + " |", "|---|" + "---|" * len(algs)]
    for b in sizes:
        mpi = by.get(("mpi", b))
        cells = []
        for a in algs:
            r = by.get((a, b))
            if not r:
                cells.append("")
                continue
            t = r["time_us_median"]
            s = ("%.0f" % t) if t >= 100 else ("%.1f" % t)
            if a == "auto" and r.get("auto_choice"):
                s += " (%s)" % r["auto_choice"]
            if not r["correct"]:
                s += " WRONG"
            if mpi and a != "mpi" and not a.startswith("mpi:") and t < mpi["time_us_median"]:
                s = "**%s**" % s
            cells.append(s)
        lines.append("| %s | %s |" % (human(b), " | ".join(cells)))
    return "\n".join(lines)


def pct_table(records, min_bytes=1 << 20):
    """Emulated cluster: busbw as a share of the hosts' link limit (links x rate), large sizes."""
    algs = list(dict.fromkeys(r["algorithm"] for r in records))
    sizes = sorted({r["bytes"] for r in records if r["bytes"] >= min_bytes})
    by = {(r["algorithm"], r["bytes"]): r for r in records}
    lines = ["| size | " + " | ".join(algs) + " |", "|---|" + "---|" * len(algs)]
    for b in sizes:
        cells = ["%.0f%%" % by[(a, b)]["busbw_pct_of_link"] if (a, b) in by else "" for a in algs]
        lines.append("| %s | %s |" % (human(b), " | ".join(cells)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--svg-dir", default=None)
    args = ap.parse_args(argv)
    for path in args.json:
        with open(path) as f:
            recs = json.load(f)
        p = recs[0]["ranks"]
        title = "allreduce %s, %d ranks (%s)" % (recs[0]["dtype"], p, recs[0]["library"].split("\n")[0])
        if "cluster_links" in recs[0]:
            title += ", %d emulated hosts x %d link(s) at %s" % (recs[0]["cluster_nodes"], recs[0]["cluster_links"],
                                                                 recs[0]["link_rate"])
        print("### %s\n\nMedian time in µs (median over launches of the per-launch median of the per-iteration "
              "maximum over ranks); bold: faster than `mpi`.\n" % title)
        print(table(recs))
        if "busbw_pct_of_link" in recs[0]:
            print("\nbusbw as %% of the link limit (%d x %s per direction per host):\n"
                  % (recs[0]["cluster_links"], recs[0]["link_rate"]))
            print(pct_table(recs))
        if args.svg_dir:
            os.makedirs(args.svg_dir, exist_ok=True)
            out = os.path.join(args.svg_dir, os.path.splitext(os.path.basename(path))[0] + ".svg")
            svg(recs, title, out)
            print("\n![%s](%s)\n" % (title, os.path.basename(out)))


if __name__ == "__main__":
    main()

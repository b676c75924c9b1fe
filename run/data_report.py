"""Turn `luatorch bench data --json` output into a markdown table and an SVG bar chart.

    python -m run.data_report docs/results/data.json --md-table --svg docs/results/data.svg

Plain SVG (no matplotlib): images/s per configuration, in-memory and file loader side by side.
"""
import argparse
import json

COLORS = {"memory": "#1f77b4", "files": "#d62728"}


def svg(records, path, width=820, height=420):
    groups = list(dict.fromkeys((r["cache"], r["mode"], r["workers"]) for r in records))
    loaders = list(dict.fromkeys(r["loader"] for r in records))
    by = {(r["cache"], r["mode"], r["workers"], r["loader"]): r for r in records}
    ymax = max(r["images_per_s"] for r in records) * 1.15 or 1
    x0, x1, y0, y1 = 60, width - 20, height - 70, 40
    gw = (x1 - x0) / max(len(groups), 1)
    bw = gw * 0.8 / max(len(loaders), 1)
    Y = lambda v: y0 - v / ymax * (y0 - y1)  # noqa: E731
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
           % (width, height), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">images/s: in-memory store vs per-file loader (higher is better)</text>'
           % x0, '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y0, x1, y0)]
    for i in range(6):
        v = ymax * i / 5
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (x0 - 4, Y(v) + 4, v))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x0, Y(v), x1, Y(v)))
    for g, key in enumerate(groups):
        gx = x0 + g * gw + gw * 0.1
        for k, ld in enumerate(loaders):
            r = by.get(key + (ld,))
            if r:
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                    gx + k * bw, Y(r["images_per_s"]), bw - 1, y0 - Y(r["images_per_s"]), COLORS.get(ld, "#777")))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (gx + gw * 0.4, y0 + 14, key[0]))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (gx + gw * 0.4, y0 + 28, key[1][:4]))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">w=%d</text>' % (gx + gw * 0.4, y0 + 42, key[2]))
    for k, ld in enumerate(loaders):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>' % (
            x1 - 160 + 80 * k, 26, COLORS.get(ld, "#777"), x1 - 146 + 80 * k, 35, ld))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def table(records):
    lines = ["| loader | cache | mode | workers | images/s | data wait (steady) | fetch ms/img | decode ms/img | "
             "transform ms/img | load store s | load avg |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        cache = r["cache"] + (" (%s)" % r["cold_method"] if r.get("cold_method") else "")
        steady = r.get("data_wait_fraction_steady")
        lines.append("| %s | %s | %s | %d | %.1f | %.1f %% (%s) | %.2f | %.1f | %.1f | %.2f | %.1f |" % (
            r["loader"], cache, r["mode"], r["workers"], r["images_per_s"], 100 * r["data_wait_fraction"],
            "%.1f %%" % (100 * steady) if steady is not None else "-",
            r["fetch_ms_per_image"], r["decode_ms_per_image"], r["transform_ms_per_image"], r["load_s"],
            r["loadavg"]))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("json")
    p.add_argument("--svg")
    a = p.parse_args(argv)
    with open(a.json) as f:
        records = json.load(f)
    print(table(records))
    if a.svg:
        svg(records, a.svg)


if __name__ == "__main__":
    main()

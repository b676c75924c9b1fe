"""Turn `luatorch bench data --json` output into a markdown table and an SVG bar chart.

    python -m run.data_report data.json [--svg data.svg]     # the markdown table on stdout

The SVG (run/svgplot.py, no matplotlib): images/s per configuration, in-memory and file loader side by side.
"""
import argparse
import json

from run.svgplot import grouped_bars

def svg(records, path):
    groups = list(dict.fromkeys((r["cache"], r["mode"], r["workers"]) for r in records))
    loaders = list(dict.fromkeys(r["loader"] for r in records))
    by = {(r["cache"], r["mode"], r["workers"], r["loader"]): r["images_per_s"] for r in records}
    grouped_bars(["%s %s w%d" % (c, m[:4], w) for c, m, w in groups],
                 {ld: [by.get(g + (ld,)) for g in groups] for ld in loaders}, path,
                 title="images/s: in-memory store vs per-file loader (higher is better)", ylabel="images/s",
                 width=900)


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

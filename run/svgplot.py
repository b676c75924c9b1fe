"""Small dependency-free SVG line and stacked-bar plots for run logs and benchmark reports."""
import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf"]


def _frame(title, xlabel, ylabel, width, height):
    x0, x1, y0, y1 = 70, width - 170, height - 50, 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, height), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">%s</text>' % (x0, title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y0, x1, y0),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y0, x0, y1),
           '<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((x0 + x1) // 2, height - 10, xlabel),
           '<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
           % ((y0 + y1) // 2, (y0 + y1) // 2, ylabel)]
    return out, (x0, x1, y0, y1)


def nice_ticks(lo, hi, most=7, integer=False):
    """Round tick values, steps of 1, 2 or 5 x 10^k, from at or below `lo` to at or above `hi`; at most
    `most` of them (the finest step that fits). `integer`: no step below 1 (epochs, counts)."""
    if not hi > lo:
        hi = lo + 1
    k = math.floor(math.log10((hi - lo) / most)) - 1
    while True:
        for m in (1, 2, 5):
            step = m * 10.0 ** k
            if integer and step < 1:
                continue
            # the epsilon keeps 0.3 / 0.1 = 2.9999... from adding a tick below lo
            first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
            if last - first + 1 <= most:
                # i*m / 10^-k is the double nearest the decimal (0.3, not 3 * 0.1 = 0.30000000000000004)
                return [i * m * 10 ** k if k >= 0 else i * m / 10 ** -k for i in range(first, last + 1)]
        k += 1


def tick_label(v, ticks, unit=""):
    """`v` with as many decimals as the tick step needs (0.2 -> "0.6", 5 -> "15") and the unit."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return ("%g" % v if decimals > 4 else "%.*f" % (decimals, v)) + unit


def _yaxis(out, box, ymin, ymax, cap=None, unit=""):
    """Round ticks over [ymin, ymax] (never above `cap`, e.g. 100 for percent); the axis spans the ticks."""
    x0, x1, y0, y1 = box
    ticks = nice_ticks(ymin, min(ymax, cap) if cap is not None else ymax)
    if cap is not None:
        ticks = [t for t in ticks if t <= cap]
    lo, hi = ticks[0], ticks[-1]

    def Y(v):
        return y0 - (v - lo) / (hi - lo) * (y0 - y1)

    for v in ticks:
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (x0 - 4, Y(v) + 4, tick_label(v, ticks, unit)))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x0, Y(v), x1, Y(v)))
    return Y


def line_plot(series, path, title="", xlabel="", ylabel="", logx=False, ycap=None, yunit="", width=760,
              height=420):
    """series: {name: [(x, y), ...]}; one polyline (with point markers) per name. The y axis starts at 0
    (or below, for negative data) and ends on a round tick; `ycap` bounds it (100 for accuracies in %),
    `yunit` follows every y tick label."""
    pts = [p for s in series.values() for p in s if p[1] is not None and math.isfinite(p[1])]
    if not pts:
        return
    fx = (lambda v: math.log2(v)) if logx else (lambda v: v)
    xs = [fx(p[0]) for p in pts]
    ys = [p[1] for p in pts]
    xmin, xmax = min(xs), max(xs)
    if xmax == xmin:
        xmin, xmax = xmin - 1, xmax + 1
    out, box = _frame(title, xlabel, ylabel, width, height)
    x0, x1, y0, y1 = box
    Y = _yaxis(out, box, min(0.0, min(ys)), max(ys), ycap, yunit)

    def X(v):
        return x0 + (fx(v) - xmin) / (xmax - xmin) * (x1 - x0)

    if logx:  # the data's own x values, thinned
        ticks = sorted({p[0] for p in pts})
        ticks = ticks[:: max(1, len(ticks) // 10)]
        labels = ["%g" % v for v in ticks]
    else:  # round values inside the data's range
        every = nice_ticks(xmin, xmax, most=10, integer=all(float(p[0]).is_integer() for p in pts))
        ticks = [v for v in every if xmin - 1e-9 <= v <= xmax + 1e-9]
        labels = [tick_label(v, every) for v in ticks]
    for v, label in zip(ticks, labels):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (X(v), y0 + 16, label))
    for k, (name, s) in enumerate(series.items()):
        color = COLORS[k % len(COLORS)]
        good = [(x, y) for x, y in s if y is not None and math.isfinite(y)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>' % (
            color, " ".join("%.1f,%.1f" % (X(x), Y(y)) for x, y in good)))
        out += ['<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (X(x), Y(y), color) for x, y in good]
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (x1 + 10, y1 + 14 * k + 10, color, name))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def stacked_bars(labels, parts, path, title="", ylabel="", width=760, height=420):
    """labels: one per bar; parts: {component: [value per bar]} stacked bottom to top."""
    totals = [sum(p[i] for p in parts.values()) for i in range(len(labels))]
    if not labels or max(totals) <= 0:
        return
    out, box = _frame(title, "", ylabel, width, height)
    x0, x1, y0, y1 = box
    Y = _yaxis(out, box, 0.0, max(totals))
    slot = (x1 - x0) / len(labels)
    for i, label in enumerate(labels):
        base = 0.0
        bx = x0 + slot * (i + 0.2)
        for k, (name, vals) in enumerate(parts.items()):
            v = vals[i]
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                bx, Y(base + v), slot * 0.6, Y(base) - Y(base + v), COLORS[k % len(COLORS)]))
            base += v
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (bx + slot * 0.3, y0 + 16, label))
    _legend_and_write(out, box, parts, path)


def grouped_bars(labels, series, path, title="", ylabel="", width=760, height=420):
    """labels: one per group; series: {name: [value per group]} drawn side by side in each group."""
    vals = [v for s in series.values() for v in s if v is not None]
    if not labels or not vals or max(vals) <= 0:
        return
    out, box = _frame(title, "", ylabel, width, height)
    x0, x1, y0, y1 = box
    Y = _yaxis(out, box, 0.0, max(vals))
    slot = (x1 - x0) / len(labels)
    bw = slot * 0.8 / len(series)
    for i, label in enumerate(labels):
        for k, (name, s) in enumerate(series.items()):
            if s[i] is not None:
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                    x0 + slot * (i + 0.1) + k * bw, Y(s[i]), bw - 1, y0 - Y(s[i]), COLORS[k % len(COLORS)]))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x0 + slot * (i + 0.5), y0 + 16, label))
    _legend_and_write(out, box, series, path)


def _legend_and_write(out, box, names, path):
    x0, x1, y0, y1 = box
    for k, name in enumerate(names):
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (x1 + 10, y1 + 14 * k + 10,
                                                                 COLORS[k % len(COLORS)], name))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

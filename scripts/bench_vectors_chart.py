#!/usr/bin/env python3
"""The recall/QPS chart of scripts/bench-vectors.py as a hand-written SVG (no plotting
library): recall@10 on x, queries per second on y, one line per engine, configuration and
client count, a point per ef_search (or probes) value. bench-vectors.py calls write_chart
when CHART=path.svg is set; standalone, it draws the JSON lines of a saved run:

    python3 scripts/bench_vectors_chart.py docs/charts/out.svg "title" < run.jsonl
"""
import html, json, math, sys

WIDTH, HEIGHT = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 70, 250, 40, 50  # margins; the legend sits in the right one
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22"]
DASHES = {"tierdb": "", "pgvector": "6,4"}

def series_of(records):
    """{label: [(recall, qps, setting)]} sorted by recall, from bench-vectors.py's JSON lines."""
    series = {}
    for record in records:
        if "qps" not in record or "recall_at_10" not in record:
            continue
        clients = record.get("clients", 1)
        label = record["engine"] + (f" {record['config']}" if record.get("config") else "") + \
            f", {clients} client{'s' if clients != 1 else ''}"
        setting = record.get("ef_search", record.get("probes"))
        series.setdefault(label, []).append((record["recall_at_10"], record["qps"], setting))
    return {label: sorted(points) for label, points in series.items()}

def nice_step(span, ticks):
    """A round tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks."""
    raw = span / max(1, ticks)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(step * power for step in (1, 2, 5, 10) if step * power >= raw)

def ticks(low, high):
    """About 6 round tick values between low and high."""
    step = nice_step(high - low, 6)
    count = int((high + 1e-9 - math.ceil(low / step) * step) // step) + 1
    return [round(math.ceil(low / step) * step + position * step, 10) for position in range(count)]

def axes(x_range, y_range, log_y=False):
    """SVG of the frame, grid and tick labels; returns (text, x_of, y_of). log_y: a
    logarithmic QPS axis with a tick per power of ten."""
    (x_low, x_high), (y_low, y_high) = x_range, y_range
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_of = lambda x: LEFT + (x - x_low) / (x_high - x_low) * plot_width
    scale = (lambda y: math.log10(y)) if log_y else (lambda y: y)
    y_of = lambda y: TOP + plot_height - (scale(y) - scale(y_low)) / (scale(y_high) - scale(y_low)) * plot_height
    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{plot_width}" height="{plot_height}" fill="none" stroke="#333"/>']
    for tick in ticks(x_low, x_high):
        parts.append(f'<line x1="{x_of(tick):.1f}" y1="{TOP}" x2="{x_of(tick):.1f}" y2="{TOP + plot_height}" stroke="#ddd"/>')
        parts.append(f'<text x="{x_of(tick):.1f}" y="{TOP + plot_height + 16}" text-anchor="middle">{tick:.2f}</text>')
    y_ticks = [10 ** power for power in range(round(math.log10(y_low)), round(math.log10(y_high)) + 1)] \
        if log_y else ticks(y_low, y_high)
    for tick in y_ticks:
        parts.append(f'<line x1="{LEFT}" y1="{y_of(tick):.1f}" x2="{LEFT + plot_width}" y2="{y_of(tick):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y_of(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    parts.append(f'<text x="{LEFT + plot_width / 2}" y="{HEIGHT - 12}" text-anchor="middle">recall@10</text>')
    parts.append(f'<text transform="translate(16,{TOP + plot_height / 2}) rotate(-90)" text-anchor="middle">queries per second' + (" (log scale)" if log_y else "") + '</text>')
    return "\n".join(parts), x_of, y_of

def chart_svg(records, title):
    series = series_of(records)
    assert series, "no records with recall_at_10 and qps"
    recalls = [point[0] for points in series.values() for point in points]
    qps = [point[1] for points in series.values() for point in points]
    x_low = max(0.0, math.floor((min(recalls) - 0.01) * 50) / 50)
    x_high = min(1.0, math.ceil((max(recalls) + 0.005) * 50) / 50)
    if x_high <= x_low:
        x_low, x_high = x_low - 0.02, x_high + 0.02
    # A logarithmic QPS axis when the lines differ by more than 20x (tier off against in memory).
    log_y = max(qps) > 20 * min(qps)
    y_range = (10 ** math.floor(math.log10(min(qps))), 10 ** math.ceil(math.log10(max(qps)))) if log_y \
        else (0, max(qps) * 1.08)
    frame, x_of, y_of = axes((x_low, x_high), y_range, log_y)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
             f'<text x="{LEFT}" y="22" font-size="14">{html.escape(title)}</text>', frame]
    # One colour per configuration and client count, one dash pattern per engine.
    kinds = sorted({label.split(" ", 1)[1] for label in series}, key=lambda kind: (len(kind), kind))
    for position, (label, points) in enumerate(sorted(series.items())):
        colour = COLOURS[kinds.index(label.split(" ", 1)[1]) % len(COLOURS)]
        dash = DASHES.get(label.split(",")[0].split()[0], "2,2")
        line = " ".join(f"{x_of(recall):.1f},{y_of(value):.1f}" for recall, value, _ in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"'
                     + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        for recall, value, setting in points:
            parts.append(f'<circle cx="{x_of(recall):.1f}" cy="{y_of(value):.1f}" r="3" fill="{colour}">'
                         f'<title>{html.escape(label)}: setting {setting}, recall {recall}, {value} QPS</title></circle>')
        legend_y = TOP + 10 + 18 * position
        legend_x = WIDTH - RIGHT + 14
        parts.append(f'<line x1="{legend_x}" y1="{legend_y}" x2="{legend_x + 24}" y2="{legend_y}" stroke="{colour}" '
                     f'stroke-width="2"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        parts.append(f'<text x="{legend_x + 30}" y="{legend_y + 4}">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"

def write_chart(records, path, title):
    with open(path, "w") as output:
        output.write(chart_svg(records, title))

if __name__ == "__main__":
    lines = [json.loads(line) for line in sys.stdin if line.strip().startswith("{")]
    write_chart(lines, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "recall@10 against QPS")

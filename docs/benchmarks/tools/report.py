#!/usr/bin/env python3
"""report.py OUTDIR: the report of a compare.sh run.

Owns: reading OUTDIR/results.jsonl (one `baton bench` row per line, labelled
"<workload>-r<run>" by compare.sh) with command.txt, machine.txt and
failures.txt; the per-workload medians over runs; the Baton/peer ratios,
paired within each run, against the issue's targets; and the PNG charts. It
writes OUTDIR/README.md and OUTDIR/*.png.

It re-runs itself in the repository's .venv (created if missing, like
scripts/test does) with matplotlib from requirements.txt beside this file.
`--no-charts` skips the charts and needs nothing but Python 3.
"""

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent

# The order systems appear in, in tables and charts: Baton first, then its peers.
SYSTEM_ORDER = ["baton", "baton-kafka", "rabbitmq", "nats", "redis", "postgres", "kafka"]
COLORS = {
    "baton": "#1f77b4",
    "baton-kafka": "#6baed6",
    "rabbitmq": "#ff7f0e",
    "nats": "#2ca02c",
    "redis": "#d62728",
    "postgres": "#9467bd",
    "kafka": "#8c564b",
}

# Closed-loop workloads compare.sh runs, with what each one is.
WORKLOADS = [
    ("produce-1", "produce", "Produce, 1 message per request, each confirmed"),
    ("produce-100", "produce", "Produce, 100 messages per request"),
    ("consume", "consume", "Consume what produce-100 wrote, ack each"),
    ("pipeline", "pipeline", "Pipeline, 1 message per transaction (take, write output, ack: atomically)"),
]

# (workload, Baton system, peer, target ratio): the goals.
RATIOS = [
    ("produce-1", "baton", "rabbitmq", 3.0),
    ("produce-1", "baton", "nats", 1.0),
    ("produce-1", "baton", "redis", 1.0),
    ("produce-1", "baton", "kafka", 1.0),
    ("pipeline", "baton", "postgres", 5.0),
    ("pipeline", "baton", "kafka", 5.0),
    # Only when baton-kafka was run: Baton's Kafka listener and Kafka with the same client.
    ("produce-1", "baton-kafka", "kafka", 1.0),
]
OPTIONAL_RATIO_SYSTEMS = {"baton-kafka"}

LABEL_RE = re.compile(r"^(?P<wl>.+)-r(?P<run>\d+)$")


# ---------------------------------------------------------------- data


def load_rows(path):
    """The rows of a results.jsonl; a line that is not JSON is an error with its line number."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: not JSON: {e}")
    return rows


def split_label(label):
    """'produce-1-r2' -> ('produce-1', 2); a label without -r<N> -> (label, None)."""
    m = LABEL_RE.match(label or "")
    if not m:
        return label or "", None
    return m.group("wl"), int(m.group("run"))


def valid(row):
    """A row whose figure can be used: no failed request and, for a pipeline, the verifier's ok."""
    if row.get("errors", 0) > 0:
        return False
    p = row.get("pipeline")
    if row.get("workload") == "pipeline":
        return bool(p) and p.get("exactly_once") is True and p.get("order") is not False
    return True


def by_system_run(rows, wl_label, row_workload):
    """{system: {run: row}} of the rows labelled wl_label-r<run> whose own workload is row_workload."""
    out = {}
    for r in rows:
        wl, run = split_label(r.get("label"))
        if wl != wl_label or run is None or r.get("workload") != row_workload:
            continue
        out.setdefault(r["system"], {})[run] = r
    return out


def median_min_max(values):
    """(median, min, max) of a non-empty list, else (None, None, None)."""
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


def run_ratios(series, num, den):
    """Per run present for both systems with valid rows: num rate / den rate. {run: ratio}."""
    a, b = series.get(num, {}), series.get(den, {})
    out = {}
    for run in sorted(set(a) & set(b)):
        ra, rb = a[run], b[run]
        if valid(ra) and valid(rb) and rb.get("rate", 0) > 0:
            out[run] = ra["rate"] / rb["rate"]
    return out


def verdict(ratio, target):
    if ratio is None:
        return "not measured"
    return "met" if ratio >= target else "not met"


def ratio_lines(rows):
    """One dict per comparison: workload, num, den, target, per-run ratios, median, verdict."""
    out = []
    cache = {}
    for wl, num, den, target in RATIOS:
        row_wl = dict((w, rw) for w, rw, _ in WORKLOADS)[wl]
        series = cache.setdefault(wl, by_system_run(rows, wl, row_wl))
        if num in OPTIONAL_RATIO_SYSTEMS and num not in series:
            continue
        per_run = run_ratios(series, num, den)
        med = statistics.median(per_run.values()) if per_run else None
        out.append(
            {
                "workload": wl,
                "num": num,
                "den": den,
                "target": target,
                "per_run": per_run,
                "median": med,
                "verdict": verdict(med, target),
            }
        )
    return out


def systems_in(series):
    known = [s for s in SYSTEM_ORDER if s in series]
    return known + sorted(s for s in series if s not in SYSTEM_ORDER)


def summarize(series):
    """{system: summary} for one workload: medians (and rate min-max) over the valid runs."""
    out = {}
    for s in systems_in(series):
        runs = series[s]
        good = [r for _, r in sorted(runs.items()) if valid(r)]
        rate = median_min_max([r["rate"] for r in good])
        out[s] = {
            "runs": len(runs),
            "valid": len(good),
            "rate": rate,
            "p50_ms": median_or_none([r["p50_us"] / 1000 for r in good]),
            "p99_ms": median_or_none([r["p99_us"] / 1000 for r in good]),
            "p999_ms": median_or_none([r["p999_us"] / 1000 for r in good]),
            "ack": next((r.get("ack_meaning", "") for r in runs.values()), ""),
            "params": next(iter(runs.values()))["params"],
            "rows": good,
        }
    return out


def median_or_none(values):
    return statistics.median(values) if values else None


def ramp_runs(rows):
    """{system: {run: {"steps": [rows], "max": row or None}}} from the ramp-r<run> rows."""
    out = {}
    for r in rows:
        wl, run = split_label(r.get("label"))
        if wl != "ramp" or run is None:
            continue
        d = out.setdefault(r["system"], {}).setdefault(run, {"steps": [], "max": None})
        if r.get("workload") == "ramp-max":
            d["max"] = r
        elif r.get("workload") == "ramp":
            d["steps"].append(r)
    return out


def ramp_curve(runs):
    """[(offered msg/s, median p99 ms, held in every run)] over runs, by offered rate."""
    pts = {}
    for d in runs.values():
        for st in d["steps"]:
            off = st["params"].get("offered_rate")
            if off is None:
                continue
            pts.setdefault(off, []).append(st)
    return [
        (off, statistics.median(s["p99_us"] / 1000 for s in steps), all(s.get("held") for s in steps))
        for off, steps in sorted(pts.items())
    ]


def sweep_rows(rows):
    """{system: [(workers, partitions, row)]} of the sweep-w<N>-p<P> rows, by worker count."""
    out = {}
    for r in rows:
        m = re.match(r"^sweep-w(\d+)-p(\d+)$", r.get("label") or "")
        if m and r.get("workload") == "pipeline":
            out.setdefault(r["system"], []).append((int(m.group(1)), int(m.group(2)), r))
    for v in out.values():
        v.sort(key=lambda t: (-t[1], t[0]))
    return out


def read_kv(path):
    """'key: value' lines (machine.txt) as ordered pairs."""
    if not path.exists():
        return []
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            pairs.append((k.strip(), v.strip()))
    return pairs


# ---------------------------------------------------------------- formatting


def fmt_rate(x):
    return "-" if x is None else f"{x:,.0f}"


def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}×"


def params_text(p, row_wl):
    bits = [f"{p.get('workers')} workers", f"batch {p.get('batch')}", f"{p.get('size')} B"]
    bits.append(f"{p.get('partitions')} partitions")
    if p.get("duration_secs") is not None and row_wl != "pipeline":
        bits.append(f"{p['duration_secs']:g} s")
    if p.get("count") is not None:
        bits.append(f"count {p['count']:,}")
    return ", ".join(bits)


def workload_table(wl_label, row_wl, summ):
    pipe = row_wl == "pipeline"
    head = "| system | runs | msg/s median | min–max |"
    sep = "|---|---|---:|---:|"
    if pipe:
        head += " workers | partitions | exactly-once, order |"
        sep += "---:|---:|---|"
    head += " p50 ms | p99 ms | p99.9 ms | \"ok\" means |"
    sep += "---:|---:|---:|---|"
    lines = [head, sep]
    for s, v in summ.items():
        med, lo, hi = v["rate"]
        runs = f"{v['valid']}" if v["valid"] == v["runs"] else f"{v['valid']} of {v['runs']}"
        cells = [s, runs, f"**{fmt_rate(med)}**", f"{fmt_rate(lo)}–{fmt_rate(hi)}"]
        if pipe:
            p = v["params"]
            checks = [r["pipeline"] for r in v["rows"] if r.get("pipeline")]
            ok = "ok" if checks and all(c["exactly_once"] and c.get("order") is not False for c in checks) else "FAILED"
            rem = sum(c.get("remaining", 0) for c in checks)
            if rem:
                ok += f" ({rem:,} inputs left at the time cap)"
            cells += [str(p.get("workers")), str(p.get("partitions")), ok]
        cells += [fmt_ms(v["p50_ms"]), fmt_ms(v["p99_ms"]), fmt_ms(v["p999_ms"]), v["ack"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_table(ratios):
    lines = [
        "| comparison | target | per run | median | verdict |",
        "|---|---:|---|---:|---|",
    ]
    for r in ratios:
        per = ", ".join(f"r{k}: {fmt_ratio(v)}" for k, v in sorted(r["per_run"].items())) or "-"
        name = f"{r['workload']}: {r['num']} / {r['den']}"
        v = r["verdict"]
        lines.append(f"| {name} | ≥{r['target']:g}× | {per} | {fmt_ratio(r['median'])} | **{v}** |")
    return "\n".join(lines)


def ramp_table(ramps):
    lines = [
        "| system | runs | highest rate held, median | min–max | p99 ms there | first step not held (median offered) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for s in systems_in(ramps):
        runs = ramps[s]
        maxes = [d["max"] for d in runs.values() if d["max"]]
        med, lo, hi = median_min_max([m["params"]["offered_rate"] for m in maxes])
        p99 = median_or_none([m["p99_us"] / 1000 for m in maxes])
        fails = []
        for d in runs.values():
            bad = [st for st in d["steps"] if not st.get("held")]
            if bad:
                fails.append(bad[0])
        if fails:
            off = statistics.median(f["params"]["offered_rate"] for f in fails)
            why = []
            for f in fails:
                dl = f["msgs"] / f["offered"] if f.get("offered") else 0
                why.append(f"{dl:.0%} delivered, p99 {fmt_ms(f['p99_us'] / 1000)} ms")
            first = f"{fmt_rate(off)} ({'; '.join(why)})"
        else:
            first = "none: the last step held (raise RAMP_MAX_STEPS)"
        lines.append(
            f"| {s} | {len(runs)} | **{fmt_rate(med)}** | {fmt_rate(lo)}–{fmt_rate(hi)} | {fmt_ms(p99)} | {first} |"
        )
    return "\n".join(lines)


def sweep_table(sweeps):
    lines = ["| system | workers | partitions | msg/s | p50 ms | p99 ms | verified |", "|---|---:|---:|---:|---:|---:|---|"]
    for s in systems_in(sweeps):
        best = max((r["rate"] for _, _, r in sweeps[s] if valid(r)), default=None)
        for w, p, r in sweeps[s]:
            rate = fmt_rate(r["rate"])
            if best is not None and r["rate"] == best and valid(r):
                rate = f"**{rate}** (best)"
            ok = "ok" if valid(r) else f"FAILED: {r.get('first_error') or 'see the row'}"
            lines.append(
                f"| {s} | {w} | {p} | {rate} | {fmt_ms(r['p50_us'] / 1000)} | {fmt_ms(r['p99_us'] / 1000)} | {ok} |"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------- charts


def charts(out, summaries, ramps, sweeps):
    """Write the PNGs; returns {name: filename} of those written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, NullFormatter

    made = {}
    thousands = FuncFormatter(lambda v, _: f"{v:,.0f}")
    ms_fmt = FuncFormatter(lambda v, _: f"{v:g}")

    def finish(fig, ax, xlabel, ylabel, title, name):
        """Labels, grid and legend shared by the line charts, then save."""
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, name)

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made[name] = name

    for wl, _, title in WORKLOADS:
        summ = summaries.get(wl)
        if not summ:
            continue
        names = [s for s in summ if summ[s]["rate"][0] is not None]
        if not names:
            continue
        meds = [summ[s]["rate"][0] for s in names]
        lo = [summ[s]["rate"][0] - summ[s]["rate"][1] for s in names]
        hi = [summ[s]["rate"][2] - summ[s]["rate"][0] for s in names]
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        bars = ax.bar(names, meds, color=[COLORS.get(s, "#777777") for s in names], yerr=[lo, hi], capsize=4)
        for b, v in zip(bars, meds):
            ax.annotate(f"{v:,.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom",
                        xytext=(0, 3), textcoords="offset points", fontsize=9)
        ax.set_ylabel("messages / s (median; bars: min–max)")
        ax.set_title(f"{wl}: {title}", fontsize=10)
        ax.set_ylim(0, max(m + h for m, h in zip(meds, hi)) * 1.15)
        ax.yaxis.set_major_formatter(thousands)
        ax.grid(axis="y", alpha=0.3)
        save(fig, f"throughput-{wl}.png")

        lat = [(s, summ[s]) for s in names if summ[s]["p50_ms"] is not None]
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        width = 0.26
        # The colour is the system; the shade and hatch say which percentile.
        styles = [("p50_ms", "p50", 0.4, ""), ("p99_ms", "p99", 0.7, "//"), ("p999_ms", "p99.9", 1.0, "xx")]
        for i, (key, _, alpha, hatch) in enumerate(styles):
            xs = [j + (i - 1) * width for j in range(len(lat))]
            vals = [max(v[key], 0.001) for _, v in lat]
            bars = ax.bar(xs, vals, width, color=[COLORS.get(s, "#777777") for s, _ in lat], alpha=alpha,
                          hatch=hatch, edgecolor="black", linewidth=0.4)
            for b, v in zip(bars, vals):
                ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom",
                            xytext=(0, 2), textcoords="offset points", fontsize=6.5)
        ax.set_xticks(range(len(lat)), [s for s, _ in lat])
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ms_fmt)
        ax.legend(handles=[Patch(facecolor="#777777", alpha=a, hatch=h, edgecolor="black", label=lab)
                           for _, lab, a, h in styles], fontsize=8)
        ax.set_ylabel("latency, ms (log scale; medians over runs)")
        what = "per transaction" if wl == "pipeline" else ("per pop + ack" if wl == "consume" else "per request")
        ax.set_title(f"{wl}: latency {what}; bars p50 / p99 / p99.9", fontsize=10)
        ax.grid(axis="y", which="both", alpha=0.3)
        save(fig, f"latency-{wl}.png")

    if ramps:
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        offered = set()
        for s in systems_in(ramps):
            pts = ramp_curve(ramps[s])
            if not pts:
                continue
            offered.update(p[0] for p in pts)
            c = COLORS.get(s, "#777777")
            ax.plot([p[0] for p in pts], [max(p[1], 0.001) for p in pts], "-", color=c, label=s)
            held = [p for p in pts if p[2]]
            bad = [p for p in pts if not p[2]]
            ax.plot([p[0] for p in held], [max(p[1], 0.001) for p in held], "o", color=c)
            ax.plot([p[0] for p in bad], [max(p[1], 0.001) for p in bad], "x", color=c, markersize=9, mew=2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        if offered and len(offered) <= 14:
            ax.set_xticks(sorted(offered))
        ax.xaxis.set_major_formatter(thousands)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.yaxis.set_major_formatter(ms_fmt)
        finish(fig, ax, "offered msg/s (open loop, 1 message per request)", "p99 latency from the due instant, ms",
               "ramp: offered rate vs p99 (o held, x not held; median over runs)", "ramp.png")

    if sweeps:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        marks = ["o-", "s--", "^:", "d-."]
        for s in systems_in(sweeps):
            # One line per partition count tried.
            for i, parts in enumerate(sorted({p for _, p, _ in sweeps[s]}, reverse=True)):
                pts = [(w, r["rate"]) for w, p, r in sweeps[s] if p == parts and valid(r)]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marks[i % len(marks)],
                            color=COLORS.get(s, "#777777"), label=f"{s}, {parts} partitions")
        ax.set_xscale("log", base=2)
        top = max((r["rate"] for v in sweeps.values() for _, _, r in v if valid(r)), default=1)
        ax.set_ylim(0, top * 1.35)  # room for the legend above the lines
        ax.xaxis.set_major_formatter(thousands)
        ax.yaxis.set_major_formatter(thousands)
        finish(fig, ax, "workers", "messages (= transactions) / s", "pipeline sweep: 1 message per transaction",
               "sweep.png")
    return made


# ---------------------------------------------------------------- the report


def build(out, with_charts=True):
    rows = load_rows(out / "results.jsonl")
    summaries = {}
    for wl, row_wl, _ in WORKLOADS:
        series = by_system_run(rows, wl, row_wl)
        if series:
            summaries[wl] = summarize(series)
    ramps = ramp_runs(rows)
    sweeps = sweep_rows(rows)
    ratios = ratio_lines(rows)
    made = charts(out, summaries, ramps, sweeps) if with_charts else {}

    md = []
    machine = read_kv(out / "machine.txt")
    date = next((v for k, v in machine if k == "date"), "")
    md.append(f"# Baton and its peers, side by side ({date[:10] or 'undated'})\n")
    cmds = (out / "command.txt").read_text(encoding="utf-8").strip() if (out / "command.txt").exists() else ""
    rel = os.path.relpath(out, ROOT) if str(out).startswith(str(ROOT)) else str(out)
    md.append("Made with (from the repository root, after `cargo build --release --bins`):\n")
    md.append("```sh\n" + (cmds + "\n" if cmds else "") + f"docs/benchmarks/tools/report.py {rel}\n```\n")
    if machine:
        md.append("## Machine\n")
        md.extend(f"* {k}: {v}" for k, v in machine)
        md.append(
            "* The load generator (`baton bench`) runs on the same cores as the system measured, "
            "and only one system runs at a time.\n"
        )
    settings = read_kv(out / "settings.txt")
    if settings:
        md.append("## Settings\n")
        md.extend(f"* {k}: {v}" for k, v in settings)
        md.append(
            "* Each system starts on an empty store (Baton: a new data directory; peers: `scripts/peers/<name>.sh "
            "clean` then `start`, each in its default durable configuration) and is stopped before the next one.\n"
        )
    md.append("## Verdicts: Baton / peer, paired within each run\n")
    md.append(
        "Each ratio divides Baton's msg/s by the peer's msg/s **of the same run** (the systems are "
        "interleaved per run, so drift hits both); the verdict is on the median of those per-run ratios. "
        "Read each with the \"ok\" column below: the systems do not promise the same thing when they answer.\n"
    )
    md.append(ratio_table(ratios) + "\n")
    for wl, row_wl, title in WORKLOADS:
        summ = summaries.get(wl)
        if not summ:
            continue
        md.append(f"## {wl}: {title}\n")
        seen = []
        for s, v in summ.items():
            t = params_text(v["params"], row_wl)
            if t not in [x for _, x in seen]:
                seen.append((s, t))
        if len(seen) == 1:
            md.append(f"Parameters: {seen[0][1]}.\n")
        else:
            md.append("Parameters: " + "; ".join(f"{s}: {t}" for s, t in seen) + ".\n")
        md.append(workload_table(wl, row_wl, summ) + "\n")
        imgs = [f"![{n}]({n})" for n in (f"throughput-{wl}.png", f"latency-{wl}.png") if n in made]
        if imgs:
            md.append(" ".join(imgs) + "\n")
    if ramps:
        md.append("## ramp: open-loop produce, rising rate\n")
        md.append(
            "1 message per request, 64 connections; each step offers a fixed rate for a fixed time and is "
            "held while p99 (from each request's due instant) ≤ 5 s and ≥ 97 % of the offered messages are "
            "answered by the step's end + 1 s. The table gives the highest rate held.\n"
        )
        md.append(ramp_table(ramps) + "\n")
        if "ramp.png" in made:
            md.append("![ramp](ramp.png)\n")
    if sweeps:
        md.append("## Pipeline worker sweep (`compare.sh --sweep`)\n")
        md.append(
            "Each line is one pipeline run (1 message per transaction) capped in time; the best verified "
            "worker count of each system is what the comparison run uses (PIPE_<SYSTEM>_WORKERS).\n"
        )
        md.append(sweep_table(sweeps) + "\n")
        if "sweep.png" in made:
            md.append("![sweep](sweep.png)\n")
    bad = [r for r in rows if not valid(r) and r.get("workload") not in ("ramp", "ramp-max")]
    fails = (out / "failures.txt").read_text(encoding="utf-8").strip() if (out / "failures.txt").exists() else ""
    md.append("## Failures and excluded rows\n")
    if not bad and not fails:
        md.append("None: every invocation exited 0, and every row is in the medians.\n")
    else:
        if fails:
            md.append("Invocations that exited non-zero (their logs are in `logs/`):\n")
            md.append("```\n" + fails + "\n```\n")
        for r in bad:
            why = r.get("first_error") or (r.get("pipeline") or {}).get("summary", "")
            md.append(f"* excluded: {r['system']} {r.get('label')}: {r.get('errors', 0)} errors; {why}")
        md.append("")
    md.append(f"Raw rows: [results.jsonl](results.jsonl) ({len(rows)} rows).\n")
    (out / "README.md").write_text("\n".join(md), encoding="utf-8")
    return out / "README.md"


def ensure_venv():
    """Re-exec in ROOT/.venv with requirements.txt installed, unless already there."""
    venv = ROOT / ".venv"
    py = venv / "bin" / "python"
    if Path(sys.prefix).resolve() == venv.resolve():
        return
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "-r", str(HERE / "requirements.txt")], check=True
    )
    os.execv(str(py), [str(py), str(Path(__file__).resolve()), *sys.argv[1:]])


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    no_charts = "--no-charts" in argv
    if len(args) != 1 or any(a not in ("--no-charts",) for a in argv if a.startswith("--")):
        print("usage: report.py [--no-charts] OUTDIR", file=sys.stderr)
        return 2
    out = Path(args[0]).resolve()
    if not (out / "results.jsonl").exists():
        print(f"report.py: {out}/results.jsonl is missing", file=sys.stderr)
        return 1
    if not no_charts:
        ensure_venv()
    path = build(out, with_charts=not no_charts)
    print(f"report.py: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

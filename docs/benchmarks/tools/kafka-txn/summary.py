"""Tables from kafka-txn.sh's runs.jsonl: every run, then the medians and the ratios.

Usage: python3 summary.py runs.jsonl [more.jsonl ...] > summary.md
"""
import json
import re
import statistics
import sys

rows = [json.loads(l) for p in sys.argv[1:] for l in open(p) if l.strip()]


def med(v):
    return statistics.median(v) if v else float("nan")


def mode(r):
    return "half" if r.get("rate_target") else "closed"


def run_no(r):
    m = re.search(r"-r(\d+)$", r.get("tag", ""))
    return int(m.group(1)) if m else 0


def fmt(x, nd=0):
    return "-" if x is None or x != x else f"{x:,.{nd}f}"


out = ["| run | K | rate target tx/s | tx/s | msg/s | commit p50 / p99 / max ms | EndTxn alone p50 / p99 ms | aborted in window | "
       "server / driver / others cores (window) | server / driver CPU ms per tx | load before | exactly once |",
       "|---|---:|---:|---:|---:|---|---|---:|---|---|---|---|"]
for r in rows:
    c = r.get("commit", {})
    e = r.get("requests", {}).get("EndTxn", {})
    w = r.get("window_cpu", {})
    v = r.get("verify", {})
    if v.get("ok"):
        ok = f"ok: {v.get('exactly_once'):,} of {v.get('committed_inputs'):,}, 0 missing, 0 duplicated, 0 unexpected"
    else:
        ok = "**FAILED**: " + (v.get("summary") or r.get("error") or "no result")
    out.append(
        f"| {r.get('tag')} | {r.get('k')} | {fmt(r.get('rate_target')) if r.get('rate_target') else 'closed loop'} | "
        f"{fmt(r.get('tx_per_s'))} | {fmt(r.get('msg_per_s'))} | {c.get('p50_ms')} / {c.get('p99_ms')} / {c.get('max_ms')} | "
        f"{e.get('p50_ms')} / {e.get('p99_ms')} | {r.get('aborted_txns')} | "
        f"{w.get('server_cores')} / {w.get('driver_cores')} / {w.get('others_cores')} | "
        f"{w.get('server_ms_per_txn')} / {w.get('driver_ms_per_txn')} | {r.get('load_before')} | {ok} |")
out.append("")
out.append("| K | mode | Baton: median tx/s (commit p50 / p99 ms) | Kafka: median tx/s (commit p50 / p99 ms) | "
           "ratio of the medians | per-run ratios (run r Baton / run r Kafka) |")
out.append("|---:|---|---|---|---:|---|")
for k in sorted({r.get("k") for r in rows if r.get("k")}):
    for m in ("closed", "half"):
        B = [r for r in rows if r.get("label") == "baton" and r.get("k") == k and mode(r) == m and r.get("tx_per_s")]
        K = [r for r in rows if r.get("label") == "kafka" and r.get("k") == k and mode(r) == m and r.get("tx_per_s")]
        if not B and not K:
            continue

        def cell(R):
            if not R:
                return "-"
            return (f"{fmt(med([r['tx_per_s'] for r in R]))} ({med([r['commit']['p50_ms'] for r in R]):.2f} / "
                    f"{med([r['commit']['p99_ms'] for r in R]):.2f})")

        ratio = med([r["tx_per_s"] for r in B]) / med([r["tx_per_s"] for r in K]) if B and K else float("nan")
        kb = {run_no(r): r for r in K}
        pr = [f"{b['tx_per_s'] / kb[run_no(b)]['tx_per_s']:.2f}" for b in B if run_no(b) in kb]
        label = "closed loop" if m == "closed" else "open loop, each at half its own closed-loop median"
        if m == "half":  # the rates are the targets: their ratio says nothing new
            out.append(f"| {k} | {label} | {cell(B)} | {cell(K)} | (targets) | - |")
        else:
            out.append(f"| {k} | {label} | {cell(B)} | {cell(K)} | {ratio:.2f} | {', '.join(pr)} |")
print("\n".join(out))

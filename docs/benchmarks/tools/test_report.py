"""Tests of report.py's arithmetic (medians over runs, per-run ratios, verdicts)
and of the README it writes, on a handmade results.jsonl. No charts: these
need nothing but pytest.

Run: .venv/bin/python -m pytest -q docs/benchmarks/tools/test_report.py
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402


def row(system, label, workload, rate, p99_us=2000, errors=0, pipeline=None, **params):
    p = {"workers": 32, "size": 256, "batch": 1, "partitions": 8, "queue": "q", "duration_secs": 15.0}
    p.update(params)
    r = {
        "workload": workload,
        "system": system,
        "params": p,
        "msgs": int(rate * 15),
        "secs": 15.0,
        "rate": rate,
        "requests": int(rate * 15),
        "errors": errors,
        "p50_us": 1000,
        "p99_us": p99_us,
        "p999_us": p99_us * 2,
        "max_us": p99_us * 3,
        "ack_meaning": f"{system} ok",
        "label": label,
    }
    if pipeline is not None:
        r["pipeline"] = pipeline
    return r


def check(ok=True, remaining=0):
    return {"transactions": 1, "transactions_per_sec": 1.0, "fed": 10, "remaining": remaining,
            "exactly_once": ok, "order": True, "out_of_order_pairs": 0, "summary": "s"}


def ramp_step(system, run, offered, held, p99_us):
    r = row(system, f"ramp-r{run}", "ramp", offered * 0.99, p99_us=p99_us, offered_rate=offered)
    r["offered"] = offered * 5
    r["msgs"] = int(offered * 5 * (0.99 if held else 0.5))
    r["held"] = held
    return r


@pytest.fixture
def outdir(tmp_path):
    rows = [
        # produce-1: baton 30k/33k/27k; rabbitmq 10k/10k/12k -> per-run ratios 3.0, 3.3, 2.25.
        row("baton", "produce-1-r1", "produce", 30000),
        row("baton", "produce-1-r2", "produce", 33000),
        row("baton", "produce-1-r3", "produce", 27000),
        row("rabbitmq", "produce-1-r1", "produce", 10000, p99_us=9000),
        row("rabbitmq", "produce-1-r2", "produce", 10000, p99_us=7000),
        row("rabbitmq", "produce-1-r3", "produce", 12000, p99_us=8000),
        # kafka: run 2 had errors, so it is left out of the median and of the ratio pairing.
        row("kafka", "produce-1-r1", "produce", 40000),
        row("kafka", "produce-1-r2", "produce", 1000, errors=5),
        # pipeline: postgres run 2 failed the verifier.
        row("baton", "pipeline-r1", "pipeline", 6000, pipeline=check()),
        row("baton", "pipeline-r2", "pipeline", 5000, pipeline=check()),
        row("postgres", "pipeline-r1", "pipeline", 1000, pipeline=check(remaining=7)),
        row("postgres", "pipeline-r2", "pipeline", 100, pipeline=check(ok=False)),
        # consume with a prefill row, which is not the consume figure.
        row("baton", "consume-r1", "prefill", 1),
        row("baton", "consume-r1", "consume", 90000),
        # ramp: two runs of baton.
        ramp_step("baton", 1, 1000, True, 3000),
        ramp_step("baton", 1, 2000, False, 9_000_000),
        ramp_step("baton", 2, 1000, True, 5000),
        ramp_step("baton", 2, 2000, True, 7000),
        ramp_step("baton", 2, 4000, False, 8_000_000),
        # sweep rows carry no run number.
        row("postgres", "sweep-w8-p200", "pipeline", 800, pipeline=check()),
        row("postgres", "sweep-w16-p200", "pipeline", 1500, pipeline=check()),
    ]
    # ramp-max: the highest step held, as `baton bench ramp` writes it.
    rows += [dict(ramp_step("baton", 1, 1000, True, 3000), workload="ramp-max"),
             dict(ramp_step("baton", 2, 2000, True, 7000), workload="ramp-max")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "command.txt").write_text("RUNS='3' docs/benchmarks/tools/compare.sh /x\n")
    (tmp_path / "machine.txt").write_text("date: 2026-11-30 10:00:00 UTC\nnproc: 2\n")
    (tmp_path / "failures.txt").write_text("kafka produce-1-r2 exit 1: 5 requests failed\n")
    return tmp_path


def test_split_label():
    assert report.split_label("produce-100-r12") == ("produce-100", 12)
    assert report.split_label("sweep-w8-p200") == ("sweep-w8-p200", None)
    assert report.split_label(None) == ("", None)


def test_median_min_max():
    assert report.median_min_max([3, 1, 2]) == (2, 1, 3)
    assert report.median_min_max([4, 1]) == (2.5, 1, 4)
    assert report.median_min_max([]) == (None, None, None)


def test_medians_leave_out_failed_runs(outdir):
    rows = report.load_rows(outdir / "results.jsonl")
    s = report.summarize(report.by_system_run(rows, "produce-1", "produce"))
    assert list(s) == ["baton", "rabbitmq", "kafka"]
    assert s["baton"]["rate"] == (30000, 27000, 33000)
    assert s["rabbitmq"]["rate"] == (10000, 10000, 12000)
    assert s["rabbitmq"]["p99_ms"] == 8.0
    assert (s["kafka"]["runs"], s["kafka"]["valid"], s["kafka"]["rate"][0]) == (2, 1, 40000)
    c = report.summarize(report.by_system_run(rows, "consume", "consume"))
    assert c["baton"]["rate"][0] == 90000


def test_ratios_pair_runs_and_judge_the_median(outdir):
    rows = report.load_rows(outdir / "results.jsonl")
    by = {(r["num"], r["den"], r["workload"]): r for r in report.ratio_lines(rows)}
    rab = by[("baton", "rabbitmq", "produce-1")]
    assert rab["per_run"] == pytest.approx({1: 3.0, 2: 3.3, 3: 2.25})
    assert rab["median"] == pytest.approx(3.0)
    assert rab["verdict"] == "met"  # exactly at the target counts as met
    kaf = by[("baton", "kafka", "produce-1")]
    assert kaf["per_run"] == pytest.approx({1: 0.75})  # run 2 of kafka had errors
    assert kaf["verdict"] == "not met"
    assert by[("baton", "nats", "produce-1")]["verdict"] == "not measured"
    pg = by[("baton", "postgres", "pipeline")]
    assert pg["per_run"] == pytest.approx({1: 6.0})  # run 2 failed the exactly-once check
    assert pg["verdict"] == "met"
    assert ("baton-kafka", "kafka", "produce-1") not in by  # not run, so not listed


def test_ramp_curve_and_max(outdir):
    rows = report.load_rows(outdir / "results.jsonl")
    ramps = report.ramp_runs(rows)
    curve = report.ramp_curve(ramps["baton"])
    assert curve == [(1000, 4.0, True), (2000, pytest.approx(4503.5), False), (4000, 8000.0, False)]
    t = report.ramp_table(ramps)
    assert "| baton | 2 | **1,500** | 1,000–2,000 |" in t


def test_readme(outdir):
    path = report.build(outdir, with_charts=False)
    md = path.read_text()
    assert md.startswith("# Baton and its peers, side by side (2026-11-30)")
    assert "RUNS='3' docs/benchmarks/tools/compare.sh /x" in md
    assert "| produce-1: baton / rabbitmq | ≥3× | r1: 3.00×, r2: 3.30×, r3: 2.25× | 3.00× | **met** |" in md
    assert "| produce-1: baton / kafka | ≥1× | r1: 0.75× | 0.75× | **not met** |" in md
    assert "| baton | 3 | **30,000** | 27,000–33,000 |" in md
    assert "| kafka | 1 of 2 | **40,000** |" in md
    assert "ok (7 inputs left at the time cap)" in md
    assert "kafka produce-1-r2 exit 1" in md
    assert "excluded: postgres pipeline-r2" in md
    assert "| postgres | 16 | 200 | **1,500** (best) |" in md
    assert "baton ok" in md  # the ack-meaning column

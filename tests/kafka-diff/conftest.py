"""Fixtures for the differential check: one Baton and one Apache Kafka for
the whole run, and the tables printed at the end (scenarios per broker and
client, then every probe step with both brokers' outcomes)."""

import pytest

from results import probe_results, scenario_results
from targets import Baton, Kafka


@pytest.fixture(scope="session")
def targets():
    kafka = Kafka().start()
    baton = None
    try:
        baton = Baton().start()
        yield {"kafka": kafka, "baton": baton}
    finally:
        if baton is not None:
            baton.stop()
        kafka.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    spec = getattr(item, "callspec", None)
    if spec is None or "system" not in spec.params:
        return
    p = spec.params
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        verdict = "skip" if rep.skipped else ("pass" if rep.passed else "FAIL")
        scenario_results.setdefault((p["scenario"], p["client"]), {})[p["system"]] = verdict


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if scenario_results:
        tr.write_sep("=", "scenarios (tests/kafka-compat) on Apache Kafka and Baton")
        tr.write_line(f"{'scenario':<18}{'client':<17}{'kafka':<7}{'baton':<7}")
        for (s, c), r in scenario_results.items():
            tr.write_line(f"{s:<18}{c:<17}{r.get('kafka', '-'):<7}{r.get('baton', '-'):<7}")
    if probe_results:
        tr.write_sep("=", "probes: Apache Kafka vs Baton (markdown)")
        tr.write_line("| probe | step | Apache Kafka | Baton | |")
        tr.write_line("|---|---|---|---|---|")
        for probe, steps in probe_results.items():
            for step, r in steps.items():
                k, b = r.get("kafka", "-"), r.get("baton", "-")
                tr.write_line(f"| {probe} | {step} | {k} | {b} | {'' if k == b else 'differs'} |")

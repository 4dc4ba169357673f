"""The differential check: the scenarios of tests/kafka-compat (imported, not
copied: they take any object with a `bootstrap`) run on Apache Kafka and on
Baton, then the probes of probes.py, whose outcomes on both must match the
recorded ones in expected.py. A changed outcome fails the run: update
expected.py and the "Differences from Apache Kafka" section of docs/kafka.md
together (test_docs_table checks they agree)."""

import importlib.util
from pathlib import Path

import pytest

import expected
import probes
from results import probe_results

ROOT = Path(__file__).resolve().parents[2]


def _load_compat():
    # Loaded under its own name so pytest does not collect its tests here.
    spec = importlib.util.spec_from_file_location("kafka_compat_clients",
                                                  ROOT / "tests" / "kafka-compat" / "test_clients.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


COMPAT = _load_compat()
# The clients that need nothing but the venv and kcat; the compat suite may
# list more (they need their own build steps there).
CLIENTS = [c for c in ("kcat", "confluent-kafka", "kafka-python") if c in COMPAT.CLIENTS]
SCENARIOS = [s for s in ("produce", "consume", "commit", "idempotent", "group_rebalance", "static_member")
             if hasattr(COMPAT, "test_" + s)]
SYSTEMS = ("kafka", "baton")


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(scenario, client, system, targets):
    getattr(COMPAT, "test_" + scenario)(client, targets[system])


@pytest.mark.parametrize("probe", probes.PROBES, ids=lambda p: p.__name__)
def test_probe(probe, targets):
    got = {}
    for system in SYSTEMS:
        try:
            steps = probe(targets[system])
        except Exception as e:  # recorded in the table, and a mismatch below
            steps = {"(probe raised)": f"{type(e).__name__}: {e}"}
        for step, outcome in steps.items():
            got.setdefault(step, {})[system] = outcome
    probe_results[probe.__name__] = got
    actual = {step: (r.get("kafka", "-"), r.get("baton", "-")) for step, r in got.items()}
    assert actual == expected.EXPECTED[probe.__name__]


def test_docs_table():
    """docs/kafka.md carries the table of expected.py, row for row."""
    doc = (ROOT / "docs" / "kafka.md").read_text()
    assert expected.markdown() in doc, "regenerate the table: python tests/kafka-diff/expected.py"

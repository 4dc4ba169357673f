"""What the run saw, filled in by the tests and printed by conftest.py."""

scenario_results = {}  # (scenario, client) -> {"kafka": "pass", "baton": "FAIL"}
probe_results = {}  # probe -> {step: {"kafka": outcome, "baton": outcome}}

"""Fixtures for the Kafka compatibility suite: a real `baton` process with its
own HTTP and Kafka ports and a temporary data directory, and the client x
scenario matrix printed at the end of the run."""

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("BATON_BIN", ROOT / "target" / "release" / "baton"))

_results = {}  # (client, scenario) -> "pass" | "FAIL" | "skip"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Baton:
    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-kafka-compat-")
        self.http_port = free_port()
        self.kafka_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.kafka_port}"
        self.log_path = Path(self.tmp.name) / "baton.log"
        self.proc = None

    def start(self):
        if not BIN.exists():
            raise RuntimeError(f"{BIN} is missing: run `cargo build --release` first")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(BIN), "serve",
             "--http-addr", f"127.0.0.1:{self.http_port}",
             "--kafka-addr", self.bootstrap,
             "--data-dir", str(Path(self.tmp.name) / "data"),
             "--kafka-initial-rebalance-delay-ms", "1000"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"baton exited: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.kafka_port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("baton did not start")

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _terminate(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self):
        """SIGTERM, then a new process on the same data directory and ports
        (what an operator's restart does; clients reconnect to the same address)."""
        self._terminate()
        self.start()

    def stop(self):
        self._terminate()
        self.tmp.cleanup()


# An external broker for the suites that can run against one (Apache Kafka, to prove
# a test right before it judges Baton): its bootstrap address, else Baton is started.
EXTERNAL = os.environ.get("KAFKA_COMPAT_BOOTSTRAP")


class External:
    def __init__(self, bootstrap):
        self.bootstrap = bootstrap


@pytest.fixture(scope="module")
def broker(request):
    """The broker under test: the external one if named, else the session's Baton."""
    if EXTERNAL:
        return External(EXTERNAL)
    return request.getfixturevalue("baton")


@pytest.fixture(scope="session")
def baton():
    b = Baton()
    b.start()
    yield b
    if os.environ.get("BATON_KEEP_LOG"):
        print(b.log())
    b.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    spec = getattr(item, "callspec", None)
    if spec is None or "client" not in spec.params:
        return
    key = (spec.params["client"], item.originalname.removeprefix("test_"))
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        if rep.skipped:
            _results[key] = "skip"
        else:
            _results[key] = "pass" if rep.passed else "FAIL"


def pytest_terminal_summary(terminalreporter):
    if not _results:
        return
    clients = sorted({c for c, _ in _results})
    scenarios = []
    for _, s in _results:
        if s not in scenarios:
            scenarios.append(s)
    w = max(len(s) for s in scenarios) + 2
    cw = max(len(c) for c in clients) + 2
    tr = terminalreporter
    tr.write_sep("=", "Kafka client x scenario")
    tr.write_line(" " * w + "".join(c.ljust(cw) for c in clients))
    for s in scenarios:
        tr.write_line(s.ljust(w) + "".join(_results.get((c, s), "-").ljust(cw) for c in clients))

"""The two brokers the differential check runs against: a Baton process it
starts (its own ports and temp dir), and Apache Kafka run by
scripts/peers/kafka.sh. Both offer `bootstrap` and `auto_create_off()`, a
context giving the address of the same kind of broker with topic
auto-creation turned off."""

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("BATON_BIN", ROOT / "target" / "release" / "baton"))
KAFKA_SH = ROOT / "scripts" / "peers" / "kafka.sh"
REBALANCE_DELAY_MS = "1000"  # the same on both, and what tests/kafka-compat gives Baton


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Baton:
    name = "baton"

    def __init__(self, auto_create=True):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-kafka-diff-")
        self.kafka_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.kafka_port}"
        self.auto_create = auto_create
        self.log_path = Path(self.tmp.name) / "baton.log"
        self.proc = None

    def start(self):
        if not BIN.exists():
            raise RuntimeError(f"{BIN} is missing: run `cargo build --release --bins` first")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [str(BIN), "serve", "--http-addr", f"127.0.0.1:{free_port()}", "--kafka-addr", self.bootstrap,
                 "--data-dir", str(Path(self.tmp.name) / "data"),
                 "--kafka-auto-create", "true" if self.auto_create else "false",
                 "--kafka-initial-rebalance-delay-ms", REBALANCE_DELAY_MS],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"baton exited: {self.log_path.read_text(errors='replace')}")
            try:
                with socket.create_connection(("127.0.0.1", self.kafka_port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("baton did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()

    @contextlib.contextmanager
    def auto_create_off(self):
        other = Baton(auto_create=False).start()
        try:
            yield other.bootstrap
        finally:
            other.stop()


class Kafka:
    """Apache Kafka through scripts/peers/kafka.sh. If it was already running
    it is left running at the end; otherwise it is stopped."""

    name = "kafka"

    def __init__(self):
        self.port = os.environ.get("KAFKA_PORT", "19092")
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.started_here = False

    def _sh(self, cmd, **env):
        e = dict(os.environ, KAFKA_PORT=self.port, KAFKA_INITIAL_REBALANCE_DELAY_MS=REBALANCE_DELAY_MS, **env)
        return subprocess.run([str(KAFKA_SH), cmd], env=e, timeout=600, stdin=subprocess.DEVNULL)

    def start(self):
        if self._sh("status").returncode != 0:
            if self._sh("start").returncode != 0:
                raise RuntimeError("scripts/peers/kafka.sh start failed")
            self.started_here = True
        return self

    def stop(self):
        if self.started_here:
            self._sh("stop")

    @contextlib.contextmanager
    def auto_create_off(self):
        # auto.create.topics.enable is a static broker setting: restart.
        self._sh("stop")
        if self._sh("start", KAFKA_AUTO_CREATE="false").returncode != 0:
            raise RuntimeError("kafka.sh start (auto-create off) failed")
        try:
            yield self.bootstrap
        finally:
            self._sh("stop")
            if self._sh("start").returncode != 0:
                raise RuntimeError("kafka.sh start (after auto-create off) failed")

"""
Fixtures for the Queen-client compatibility suite.

Each test gets its own Baton server:

    $BATON_BIN serve --http-addr 127.0.0.1:<free port> --data-dir <fresh temp dir>

BATON_BIN defaults to <repo>/target/release/baton. The fixture waits (bounded)
for GET /health to answer 200, hands the test the base URL, and stops the
process group (SIGTERM, then SIGKILL) afterwards. When a test fails, the tail of the
server log is printed in the teardown section of the report.

Set BATON_URL=http://host:port to run against an already running server
instead (nothing is spawned or killed then; queue names are unique per test).

Other knobs: BATON_HEALTH_TIMEOUT (seconds, default 20).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator, Optional

import pytest
import contextlib
from queen import Queen

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BATON_BIN = REPO_ROOT / "target" / "release" / "baton"
HEALTH_TIMEOUT_S = float(os.environ.get("BATON_HEALTH_TIMEOUT", "20"))
STOP_TIMEOUT_S = 10.0
LOG_TAIL_LINES = 80


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report on the item so fixtures can see failures."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return f"<cannot read {path}: {error}>"
    return "\n".join(text.splitlines()[-lines:])


def _health_ok(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _wait_healthy(
    base_url: str,
    proc: Optional[subprocess.Popen],
    timeout_s: float,
    log_path: Optional[Path] = None,
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = _log_tail(log_path) if log_path else ""
            raise RuntimeError(
                f"baton exited with code {proc.returncode} before /health answered 200.\n"
                f"--- server log tail ---\n{tail}"
            )
        if _health_ok(base_url):
            return
        time.sleep(0.1)
    tail = _log_tail(log_path) if log_path else ""
    raise TimeoutError(
        f"GET {base_url}/health did not return 200 within {timeout_s:.0f}s.\n"
        f"--- server log tail ---\n{tail}"
    )


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Signal the process group the server was started in (its pgid is its
    pid: start_new_session=True), so a wrapper script's children go too."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen) -> None:
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT_S)


def _test_failed(request: pytest.FixtureRequest) -> bool:
    for phase in ("setup", "call"):
        report = getattr(request.node, f"rep_{phase}", None)
        if report is not None and report.failed:
            return True
    return False


@pytest.fixture
def baton_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (http://127.0.0.1:PORT) of a fresh Baton server for this test."""
    external = os.environ.get("BATON_URL")
    if external:
        external = external.rstrip("/")
        _wait_healthy(external, None, HEALTH_TIMEOUT_S)
        yield external
        return

    binary = Path(os.environ.get("BATON_BIN", str(DEFAULT_BATON_BIN)))
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(
            f"Baton server binary not found or not executable: {binary}\n"
            "Build it (cargo build --release) or set BATON_BIN=/path/to/baton, "
            "or point BATON_URL at a running server.",
            pytrace=False,
        )

    workdir = tmp_path_factory.mktemp("baton")
    data_dir = workdir / "data"
    data_dir.mkdir()
    log_path = workdir / "server.log"

    proc: Optional[subprocess.Popen] = None
    base_url = ""
    last_error: Optional[Exception] = None
    # A free port can be taken between probing and binding; retry that case only.
    for _attempt in range(3):
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}"
        cmd = [str(binary), "serve", "--http-addr", f"127.0.0.1:{port}", "--data-dir", str(data_dir)]
        with open(log_path, "ab") as log:
            log.write(f"\n$ {' '.join(cmd)}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=str(workdir),
                start_new_session=True,
            )
        try:
            _wait_healthy(base_url, proc, HEALTH_TIMEOUT_S, log_path)
            last_error = None
            break
        except Exception as error:  # noqa: BLE001
            last_error = error
            _stop(proc)
            if "in use" not in _log_tail(log_path).lower():
                break
    if last_error is not None:
        pytest.fail(f"could not start baton: {last_error}", pytrace=False)

    assert proc is not None
    try:
        yield base_url
    finally:
        _stop(proc)
        if _test_failed(request):
            print(f"\n--- baton log ({log_path}), last {LOG_TAIL_LINES} lines ---")
            print(_log_tail(log_path))


@contextlib.asynccontextmanager
async def open_queen(*args, **kwargs):
    """A Queen client built with the client's own arguments (one URL, or `urls=[...]`
    and the rest).

    Queen() installs SIGINT/SIGTERM handlers and close() resets them to
    SIG_DFL, which would break pytest's Ctrl-C handling, so they are restored.
    """
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    queen = Queen(*args, **kwargs)
    try:
        yield queen
    finally:
        try:
            await asyncio.wait_for(queen.close(), 35)
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)

"""Issue 16: the compatibility suite covers every public method and builder of queen-mq
2.6.0. This test reads the installed client's public API (every class and function it
exports, and the builders its calls return) and fails for each method, property or
function that no other test in this directory calls. It needs no server: it keeps the
suite from silently falling behind the client, and docs/queen-client-notes.md's table
names the test of each feature.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import queen
from queen.builders.consume_builder import ConsumeBuilder
from queen.builders.dlq_builder import DLQBuilder
from queen.builders.operation_builder import OperationBuilder
from queen.builders.push_builder import PushBuilder
from queen.builders.queue_builder import QueueBuilder
from queen.builders.transaction_builder import TransactionBuilder

# Builders the exported calls return (queue(), transaction(), dlq(), push(), consume()...).
BUILDERS = [QueueBuilder, TransactionBuilder, DLQBuilder, PushBuilder, ConsumeBuilder, OperationBuilder]


def public_api() -> list[str]:
    names = []
    classes = [getattr(queen, n) for n in queen.__all__ if inspect.isclass(getattr(queen, n))] + BUILDERS
    for cls in classes:
        if issubclass(cls, BaseException):
            continue  # errors: their attributes are read, not called
        for name, member in inspect.getmembers(cls):
            if name.startswith("_"):
                continue
            static = inspect.getattr_static(cls, name)
            if inspect.isfunction(member) or isinstance(static, property):
                names.append(f"{cls.__name__}.{name}")
    for n in queen.__all__:
        obj = getattr(queen, n)
        if inspect.isfunction(obj):
            names.append(n)
    return sorted(set(names))


def test_every_public_method_of_the_client_is_called_by_a_test() -> None:
    here = Path(__file__).resolve()
    # The tests and the helpers they call the client through.
    files = [*here.parent.glob("test_*.py"), here.parent / "queen_helpers.py"]
    sources = "\n".join(p.read_text() for p in files if p.resolve() != here)
    api = public_api()
    assert len(api) > 150, f"the client's API looks truncated: {len(api)} names"
    missing = []
    for full in api:
        name = full.rsplit(".", 1)[-1]
        # A method or property as `.name` (`queen.admin.health(`, `lock.token`), a
        # top-level function as `name(`.
        pattern = rf"\.{re.escape(name)}\b" if "." in full else rf"\b{re.escape(name)}\("
        if not re.search(pattern, sources):
            missing.append(full)
    assert not missing, f"{len(missing)} of {len(api)} public names of queen-mq are called by no compat test: {missing}"

"""Chaos fixtures: the integration suite's lab fixtures, plus operators the tests own.

The chaos tests run on the same real servers as tests/integration and reuse its
fixtures (the kube-apiserver, the OpenStack lab, the session's leading operator). They
must run in a pytest session of their own (``make chaos``, or the line in
dev/test.sh): both conftests define the session fixtures, and two session operators
would fight for the lease, so in a session that also collects tests/integration the
chaos tests are deselected (and the terminal summary says so).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.report import SUMMARIES
from tests.chaos.stack import OperatorFactory, ensure_leading
from tests.integration.kube_fixtures import *  # noqa: F403
from tests.integration.kumo_fixtures import *  # noqa: F403
from tests.integration.kumo_fixtures import KumoOperator
from tests.integration.openstack_fixtures import *  # noqa: F403

HERE = Path(__file__).resolve().parent
INTEGRATION = HERE.parent / "integration"
_deselected: list[str] = []


def _under(item: pytest.Item, directory: Path) -> bool:
    return directory in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chaos = [i for i in items if _under(i, HERE)]
    if chaos and any(_under(i, INTEGRATION) for i in items):
        _deselected.extend(i.nodeid for i in chaos)
        config.hook.pytest_deselected(items=chaos)
        items[:] = [i for i in items if not _under(i, HERE)]
        return
    for item in chaos:
        item.add_marker(pytest.mark.chaos)
        item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _deselected:
        terminalreporter.write_sep("-", "chaos tests deselected")
        terminalreporter.write_line(
            f"{len(_deselected)} chaos test(s) need a pytest session of their own "
            "(make chaos, or: .venv/bin/pytest tests/chaos)"
        )
    if SUMMARIES:
        terminalreporter.write_sep("-", "chaos summary")
        for line in SUMMARIES:
            terminalreporter.write_line(line)


@pytest.fixture
def session_leader(kumo_operator: KumoOperator) -> Iterator[KumoOperator]:
    """The session's operator, leading; leading again after the test (which may have
    killed it any number of times)."""
    ensure_leading(kumo_operator)
    yield kumo_operator
    ensure_leading(kumo_operator)


@pytest.fixture
def own_operator(kumo_operator: KumoOperator) -> Iterator[OperatorFactory]:
    """Operators the test starts itself, e.g. with another clouds.yaml, while the
    session's operator is stopped (gracefully: it releases the lease, so the test's
    leads at once). All are stopped after the test and the session's leads again.

    ``own_operator(clouds_yaml, cloud, log_name, *extra_args)`` starts one.
    """
    kumo_operator.stop()
    started: list[KumoOperator] = []

    def start(clouds_yaml: str, cloud: str, log_name: str, *extra: str) -> KumoOperator:
        operator = KumoOperator(
            kumo_operator.kube, clouds_yaml, cloud, log_name, kumo_operator.kubeconfig
        )
        operator.start(*extra)
        started.append(operator)
        return operator

    yield start
    for operator in started:
        operator.stop()
    ensure_leading(kumo_operator)

"""The cluster's identity at startup: given, else derived from kube-system's UID; Kumo
does not start without one. Shown by the probes, settable by flag or environment."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kumo import cli
from kumo.engine.errors import TerminalError
from kumo.ports import markers
from kumo.runtime import cluster
from kumo.runtime.health import Health
from tests.unit.runtime.test_health import probe

KUBE_SYSTEM_UID = "3f2a9c1b-7d4e-4a1b-9c3d-5e6f7a8b9c0d"


class Namespaces:
    """The Kubernetes client's one read runtime/cluster.py makes."""

    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.asked: list[str] = []

    async def get_namespace(self, name: str) -> dict[str, object] | None:
        self.asked.append(name)
        if self.error is not None:
            raise self.error
        return self.answer  # type: ignore[no-any-return]


def establish(kube: Namespaces, given: str | None = None) -> str:
    return asyncio.run(cluster.establish(kube, given))


def test_derived_from_kube_systems_uid_and_set_for_the_process() -> None:
    kube = Namespaces({"metadata": {"name": "kube-system", "uid": KUBE_SYSTEM_UID}})
    assert establish(kube) == "3f2a9c1b7d4e"
    assert kube.asked == ["kube-system"]
    assert markers.cluster() == "3f2a9c1b7d4e"
    assert markers.marker_tags("u")[-1] == "kumo-cluster=3f2a9c1b7d4e"


def test_a_given_id_wins_and_needs_no_read() -> None:
    kube = Namespaces(error=AssertionError("not asked"))
    assert establish(kube, "old-prod") == "old-prod"
    assert kube.asked == [] and markers.cluster() == "old-prod"


@pytest.mark.parametrize(
    ("kube", "given", "says"),
    [
        (Namespaces(), None, "namespace kube-system not found"),
        (Namespaces({"metadata": {"name": "kube-system"}}), None, "has no UID"),
        (
            Namespaces(error=TerminalError("KubernetesForbidden", "GET …: forbidden")),
            None,
            "cannot read namespace kube-system",
        ),
        (Namespaces(), "Not An ID", "--cluster-id: cluster ID 'Not An ID'"),
    ],
)
def test_without_an_identity_kumo_does_not_start_and_says_why(
    kube: Namespaces, given: str | None, says: str
) -> None:
    before = markers.cluster()
    with pytest.raises(cluster.ClusterIdentityError) as error:
        establish(kube, given)
    assert says in str(error.value)
    if given is None:
        assert "--cluster-id" in str(error.value), "the way out is named"
    assert markers.cluster() == before, "nothing set"


def test_the_probes_name_the_cluster() -> None:
    answers = probe([Health(synced=True, role="leader", lease_ok=True, cluster="3f2a9c1b7d4e")])
    assert {path: body["cluster"] for path, _, body in answers} == {
        "/readyz": "3f2a9c1b7d4e",
        "/healthz": "3f2a9c1b7d4e",
    }


def test_the_flag_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cluster.ENV, raising=False)
    assert cli.build_parser().parse_args(["run"]).cluster_id is None
    assert cli.build_parser().parse_args(["run", "--cluster-id", "a1"]).cluster_id == "a1"
    monkeypatch.setenv(cluster.ENV, "from-env")
    assert cli.build_parser().parse_args(["run"]).cluster_id == "from-env"
    assert cli.build_parser().parse_args(["plan"]).cluster_id == "from-env"

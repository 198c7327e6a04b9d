"""Rollout limits: defaults by identity, percentages as a Deployment's, what is refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kumo.api.crd import structural_schema
from kumo.api.virtualmachinegroup import RolloutStrategy, VirtualMachineGroupSpec
from kumo.kinds.virtualmachinegroup.plan import validate
from kumo.kinds.virtualmachinegroup.strategy import Limits, problem, resolve

TEMPLATE = {"image": "centos79", "flavor": "m1.tiny"}


def strategy(**limits: Any) -> RolloutStrategy:
    return RolloutStrategy.model_validate(limits)


@pytest.mark.parametrize(
    ("identity", "given", "replicas", "limits"),
    [
        ("Random", {}, 3, Limits(1, 0)),
        ("Ordinal", {}, 3, Limits(0, 1)),
        ("Ordinal", {"maxUnavailable": 2}, 3, Limits(0, 2)),
        ("Ordinal", {"maxSurge": 0}, 3, Limits(0, 1)),
        ("Ordinal", {"maxSurge": "0%"}, 3, Limits(0, 1)),
        ("Random", {"maxSurge": 0}, 3, Limits(0, 1)),  # not both 0: unavailable 1
        ("Random", {"maxSurge": "0%"}, 3, Limits(0, 1)),
        ("Random", {"maxUnavailable": 2}, 3, Limits(1, 2)),
        ("Random", {"maxSurge": 3}, 3, Limits(3, 0)),
        # Percentages of replicas: surge rounds up, unavailable down.
        ("Random", {"maxSurge": "25%", "maxUnavailable": "25%"}, 10, Limits(3, 2)),
        ("Random", {"maxSurge": "10%"}, 3, Limits(1, 0)),
        ("Random", {"maxSurge": "100%", "maxUnavailable": "100%"}, 7, Limits(7, 7)),
        ("Ordinal", {"maxUnavailable": "50%"}, 5, Limits(0, 2)),
        # Both 0 once rounded: unavailable 1, as a Deployment does.
        ("Random", {"maxSurge": 0, "maxUnavailable": "10%"}, 3, Limits(0, 1)),
        ("Ordinal", {"maxUnavailable": "10%"}, 3, Limits(0, 1)),
        ("Random", {"maxSurge": "10%"}, 0, Limits(0, 1)),
    ],
)
def test_limits_default_by_identity_and_scale_percentages(
    identity: str, given: dict[str, Any], replicas: int, limits: Limits
) -> None:
    assert resolve(strategy(**given), identity, replicas) == limits  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("identity", "given", "field"),
    [
        ("Random", {"maxSurge": 0, "maxUnavailable": 0}, "spec.strategy: maxSurge and"),
        ("Random", {"maxSurge": "0%", "maxUnavailable": 0}, "spec.strategy: maxSurge and"),
        ("Ordinal", {"maxSurge": 1}, "spec.strategy.maxSurge: must be 0"),
        ("Ordinal", {"maxSurge": "25%"}, "spec.strategy.maxSurge: must be 0"),
        ("Ordinal", {"maxUnavailable": 0}, "spec.strategy.maxUnavailable: cannot be 0"),
        ("Ordinal", {"maxUnavailable": "0%"}, "spec.strategy.maxUnavailable: cannot be 0"),
    ],
)
def test_what_admission_refuses_is_refused_naming_the_field(
    identity: str, given: dict[str, Any], field: str
) -> None:
    message = problem(strategy(**given), identity)  # type: ignore[arg-type]
    assert message is not None and message.startswith(field)


@pytest.mark.parametrize(
    ("identity", "given"),
    [
        ("Ordinal", {}),
        ("Ordinal", {"maxUnavailable": 1}),
        ("Ordinal", {"maxSurge": 0}),
        ("Random", {"maxSurge": 0}),
        ("Random", {"maxUnavailable": 0}),
        ("Random", {"maxSurge": "0%", "maxUnavailable": "10%"}),  # 0 only once rounded
    ],
)
def test_what_needs_no_boilerplate_is_accepted(identity: str, given: dict[str, Any]) -> None:
    assert problem(strategy(**given), identity) is None  # type: ignore[arg-type]


def test_a_stateful_group_needs_no_strategy() -> None:
    spec = VirtualMachineGroupSpec.model_validate(
        {"replicas": 2, "identity": "Ordinal", "template": TEMPLATE,
         "volumeTemplates": [{"name": "data", "size": 1}]}
    )  # fmt: skip
    assert validate(spec) is None
    assert resolve(spec.strategy, spec.identity, spec.replicas) == Limits(0, 1)


@pytest.mark.parametrize("value", ["25", "101%", "-1%", "1.5%", "025%", -1, 1001, "%"])
def test_a_limit_is_a_count_or_a_percentage(value: object) -> None:
    with pytest.raises(ValidationError):
        strategy(maxSurge=value)


def test_the_crd_types_them_int_or_string_with_their_bounds_in_cel() -> None:
    limit = structural_schema(RolloutStrategy)["properties"]["maxSurge"]
    assert limit["x-kubernetes-int-or-string"] is True and "type" not in limit
    (check,) = limit["x-kubernetes-validations"]
    assert check["rule"] == (
        "type(self) == int ? self >= 0 && self <= 1000 : self.matches(r'^(100|[1-9]?[0-9])%$')"
    )
    assert "default" not in limit, "the default depends on identity: resolved by Kumo"

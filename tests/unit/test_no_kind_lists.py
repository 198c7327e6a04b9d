"""No list of kinds or actuators is written by hand outside the registry.

The runtime, the bench and the tests take kinds from :data:`kumo.kinds.registry.RECORDS`
(or :data:`kumo.api.kinds.KINDS`, :func:`kumo.kinds.registry.deletion_order`), so adding a
kind cannot leave a forgotten copy behind. This test reads their sources and fails on a
list, tuple, set or dict literal that names two or more kinds (as ``Kind``, plural or
actuator class), e.g. ``("dnsrecords", "loadbalancers")`` or
``[VirtualMachineActuator(), LoadBalancerActuator()]``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kumo.kinds import registry

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src/kumo/runtime", "bench", "tests")


def kind_names() -> frozenset[str]:
    """What names a kind in source: its kind, its plural and its actuator's class."""
    return frozenset(
        name
        for record in registry.RECORDS
        for name in (record.info.kind, record.info.plural, record.actuator.__name__)
    )


def _named(node: ast.expr, names: frozenset[str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value in names else None
    if isinstance(node, ast.Call):  # VirtualMachineActuator()
        node = node.func
    if isinstance(node, ast.Name | ast.Attribute):
        name = node.id if isinstance(node, ast.Name) else node.attr
        return name if name in names else None
    return None


def kind_lists(source: str, names: frozenset[str]) -> list[tuple[int, list[str]]]:
    """(line, kinds named) of every collection literal naming two kinds or more."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items: list[ast.expr] = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        named = sorted({n for item in items if (n := _named(item, names))})
        if len(named) >= 2:
            found.append((node.lineno, named))
    return found


def test_no_hand_written_list_of_kinds_outside_the_registry() -> None:
    names = kind_names()
    found = [
        f"{path.relative_to(ROOT)}:{line}: {named}"
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, named in kind_lists(path.read_text(), names)
    ]
    assert not found, "derive these from kumo.kinds.registry:\n" + "\n".join(found)


def test_the_check_sees_kinds_plurals_and_actuators() -> None:
    names = kind_names()
    first, second = registry.RECORDS[:2]
    kinds, plurals = (first.info.kind, second.info.kind), (first.info.plural, second.info.plural)
    actuators = (first.actuator.__name__, second.actuator.__name__)
    assert kind_lists(f"X = {kinds!r}", names) == [(1, sorted(kinds))]
    assert kind_lists(f"if kind in {set(plurals)!r}: pass", names) == [(1, sorted(plurals))]
    calls = f"[{actuators[0]}(), m.{actuators[1]}()]"
    assert kind_lists(calls, names) == [(1, sorted(actuators))]
    assert kind_lists(f"X = {{{kinds[0]!r}: 1, {kinds[1]!r}: 2}}", names) == [(1, sorted(kinds))]
    assert kind_lists(f"X = ({kinds[0]!r}, 'ConfigMap')", names) == [], "one kind is no list"
    assert kind_lists("X = [info.kind for info in KINDS]", names) == []

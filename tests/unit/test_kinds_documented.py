"""Every kind is in each table a new kind must join by hand: the README's table of kinds,
docs/resources.md (its section, its guarantees and its row of the ownership markers) and
the examples (one manifest per kind, named in examples/README.md). The registry
(kumo.kinds.registry.RECORDS) is the list of kinds; a kind missing from a table fails
here, not in a reader's hands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kumo.kinds import registry

ROOT = Path(__file__).resolve().parents[2]
KINDS = [record.info for record in registry.RECORDS]


def kind_id(info: object) -> str:
    return str(getattr(info, "kind", info))


def text(path: str) -> str:
    return (ROOT / path).read_text()


@pytest.mark.parametrize("info", KINDS, ids=kind_id)
def test_the_readme_table_lists_it(info: registry.KindInfo) -> None:
    assert re.search(rf"^\| `{info.kind}` \|", text("README.md"), re.M), (
        f"README.md: add a row for `{info.kind}` to the table of kinds"
    )


@pytest.mark.parametrize("info", KINDS, ids=kind_id)
def test_docs_resources_has_its_section_guarantees_and_marker(info: registry.KindInfo) -> None:
    doc = text("docs/resources.md")
    assert re.search(rf"^## {info.kind}(?: |$)", doc, re.M), f"no '## {info.kind}' section"
    assert re.search(rf"^### {info.kind}: guarantees$", doc, re.M), (
        f"no '### {info.kind}: guarantees' section"
    )
    markers = doc[doc.index("### Ownership markers") :]
    assert re.search(rf"^\| {info.kind} (?:\(|\|)", markers, re.M), (
        f"the ownership markers table has no row for {info.kind}"
    )


@pytest.mark.parametrize("info", KINDS, ids=kind_id)
def test_it_has_an_example_named_in_the_examples_readme(info: registry.KindInfo) -> None:
    path = ROOT / "examples" / f"{info.singular}.yaml"
    assert path.exists(), f"examples/{info.singular}.yaml"
    assert yaml.safe_load(path.read_text())["kind"] == info.kind
    assert f"`{info.singular}.yaml`" in text("examples/README.md")

"""No module in src/ is over 600 lines: past that a module holds several things a reader
must keep apart (the 707-line VirtualMachine actuator, the 1,325-line watch). No
allowlist: a module that grows past it is split, by what it holds."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 600


def test_no_module_in_src_is_over_600_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for path in (ROOT / "src").rglob("*.py")
    }
    assert sizes, "src/ holds modules"
    over = {path: n for path, n in sorted(sizes.items()) if n > LIMIT}
    assert not over, f"split these (at most {LIMIT} lines each): {over}"

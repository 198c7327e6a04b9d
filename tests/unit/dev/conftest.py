"""The lab's own scripts under test (dev/lib.sh, dev/shim/): dev/shim/ is not a package
(the shim runs as ``python dev/shim/shim.py``, its modules side by side), so its
directory goes on the path the way that run puts it there."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SHIM = REPO / "dev" / "shim"

if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))

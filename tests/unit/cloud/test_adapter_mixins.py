"""The adapter is one class mixed from one class per service: a helper two services both
define would silently be one of them for both (the first in the MRO wins)."""

from __future__ import annotations

from collections import Counter

from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.base import CloudBase


def test_no_two_service_modules_define_the_same_member() -> None:
    mixins = [
        c for c in OpenStackCloud.__mro__[1:] if issubclass(c, CloudBase) and c is not CloudBase
    ]
    assert len(mixins) >= 9
    names = Counter(name for mixin in mixins for name in vars(mixin) if not name.startswith("__"))
    assert [name for name, count in names.items() if count > 1] == []

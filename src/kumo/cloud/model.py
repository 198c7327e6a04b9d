"""The plain values the cloud returns live in :mod:`kumo.ports.model` (the engine and
the kinds may import them without the adapter); re-exported here for the adapter, with
Kumo's ownership marker (:mod:`kumo.ports.markers`)."""

from kumo.ports.markers import *  # noqa: F403
from kumo.ports.model import *  # noqa: F403
from kumo.ports.model import __all__ as __all__

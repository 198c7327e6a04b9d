"""The marker in a Neutron resource's description, shared by the kinds whose resources
Neutron takes tags on only after the create: FloatingIP, Network (its network and its
router) and SecurityGroup.

Neutron (Zed) has no ``tag-creation`` extension: a create cannot carry tags. So the
create call writes Kumo's marker word at the end of the description (:func:`text`) and
the tags ``kumo`` + ``kumo-owner=<uid>`` follow in a second call. A resource found with
the word but without the tags — the create's answer was lost, or Kumo was killed between
the two calls — carries the marker all the same (:data:`owner`): the next pass adopts it
and completes its tags (:func:`needs_tags`, :func:`marked_tags`); it never creates a
second one.

The user's description, where the kind has one, keeps its text: Kumo's word follows it
(the API's ``maxLength``, ``kumo.api.common.MARKED_DESCRIPTION_MAX``, leaves room for
it), and what is compared with the spec is the text without Kumo's words
(:func:`wanted`). Orphan deletion swaps the word for the orphan mark along with the tags
(:func:`released`). ``marked_tags`` (the tags of an import or a completed create) is the
markers module's.

The marker's format is :mod:`kumo.ports.markers`'s alone (``owner_word``,
``marked_tags``, ``released_words``, ``user_text``, read back by
:func:`kumo.ports.model.described_marker`): nothing here spells it. A legacy marker (from
before markers named the cluster) is re-marked by the ownership routine through the
kind's ``mark``, which writes both (:func:`legacy`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from kumo.engine.errors import TerminalError
from kumo.ports.model import (
    Described,
    described_marker,
    described_owner,
    is_legacy,
    marker_tags,
    owner_word,
    released_tags,
    released_words,
    user_text,
)
from kumo.ports.model import marked_tags as _marked_tags

#: Neutron's limit on a description.
DESCRIPTION_MAX = 255

D = TypeVar("D", bound=Described)

#: The owning object's UID: the ``kumo-owner`` tag, else the description's marker word.
owner = described_owner


def legacy(resource: Described) -> bool:
    """Its marker is from before markers named the cluster: the object re-marks it."""
    return is_legacy(described_marker(resource))


def text(user: str | None, uid: str, field: str = "spec.description") -> str:
    """The description a resource of ``uid`` gets: the user's text followed by Kumo's
    marker word. Too long for Neutron: TerminalError ``DescriptionTooLong`` on
    ``field`` (the API's limit refuses it at admission already)."""
    marker = owner_word(uid)
    described = f"{user} {marker}" if user else marker
    if len(described) > DESCRIPTION_MAX:
        raise TerminalError(
            "DescriptionTooLong",
            f"at most {DESCRIPTION_MAX - len(marker) - 1} characters (Neutron allows "
            f"{DESCRIPTION_MAX} and Kumo appends its ownership marker {marker!r})",
            field=field,
        )
    return described


def wanted(user: str | None, current: str | None, uid: str) -> str:
    """The description the resource should have: ``user``'s text (None: the text it
    has now, without Kumo's words) and ``uid``'s marker word."""
    return text(user_text(current) if user is None else user, uid)


#: ``tags`` with ``uid``'s marker of this cluster and no other marker or orphan mark.
marked_tags = _marked_tags


def needs_tags(tags: list[str], uid: str) -> bool:
    """The marker tags are incomplete (the tag call after the create never came, or a
    tag was removed by hand): put them back."""
    return not set(marker_tags(uid)) <= set(tags)


async def complete_tags(
    resource: D, uid: str, set_tags: Callable[[str, list[str]], Awaitable[None]]
) -> D:
    """``resource`` with ``uid``'s marker tags complete: one ``set_tags`` call when they
    are not (adopted by its description after a lost answer or a crash, or a tag removed
    by hand), none when they are."""
    if not needs_tags(resource.tags, uid):
        return resource
    tags = marked_tags(resource.tags, uid)
    await set_tags(resource.id, tags)
    changed: Any = resource  # a dataclass (the model's), which the Protocol cannot say
    return cast(D, dataclasses.replace(changed, tags=tags))


def released(tags: list[str], description: str | None, uid: str) -> tuple[list[str], str]:
    """Tags and description with ``uid``'s marker swapped for the orphan mark (again
    after a crash half-way: a description released already stays as it is)."""
    return released_tags(tags, uid), released_words(description or "", uid, DESCRIPTION_MAX)

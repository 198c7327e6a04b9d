"""Pure decisions for VirtualMachine: what the server should look like and what to fix.

Fields Nova cannot change in place (image, flavor, user_data, networks, ports, zone, key,
server group) are folded into a hash stored in server metadata; a different hash means
the server is replaced. Description, metadata, Kumo's tags and the security groups
(Nova's add/remove security group) are corrected in place, and so are the allowed
address pairs (on the server's own port).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import math
import re
from dataclasses import dataclass, field

from kumo.api.virtualmachine import INIT_SCRIPT_MAX_BYTES, USER_DATA_MAX_BASE64, VirtualMachineSpec
from kumo.engine import conditions
from kumo.engine.dryrun import Change
from kumo.engine.objects import Body, Store
from kumo.ports.model import Server, marker_tags

HASH_KEY = "kumo:spec-hash"  # Nova metadata keys allow [a-zA-Z0-9-_:. ] only
NAME_KEY = "kumo:object"

#: How long a server in ERROR is reported before its first replacement; every further
#: replacement (while it never becomes ACTIVE) waits twice as long, up to the cap, so
#: a cloud that cannot place the server is not asked again every minute for ever.
REPLACEMENT_BASE_SECONDS = 60.0
REPLACEMENT_CAP_SECONDS = 3600.0

PHASES = {
    "ACTIVE": "Running",
    "BUILD": "Building",
    "REBUILD": "Building",
    "ERROR": "Error",
    "SHUTOFF": "Stopped",
    "PAUSED": "Stopped",
    "SUSPENDED": "Stopped",
    "DELETED": "Deleted",
}


def spec_hash(spec: VirtualMachineSpec, user_data: str | None, legacy: bool = False) -> str:
    """Hash of everything whose change replaces the server. Security groups change in
    place: they are left out (as an empty list, so a VM without any keeps its hash).
    ``legacy``: the hash servers made before carry (their security groups in it), so
    that they are not replaced for it (:func:`needs_replacement`)."""
    immutable: dict[str, object] = {
        "image": spec.image,
        "flavor": spec.flavor,
        "userData": user_data,
        "networks": spec.networks,
        "availabilityZone": spec.availability_zone,
        "keyName": spec.key_name,
        "securityGroups": sorted(spec.security_groups) if legacy else [],
        "serverGroup": spec.server_group,
    }
    if spec.root_volume is not None:  # only when set: other servers keep their hash
        immutable["rootVolume"] = spec.root_volume.model_dump(by_alias=True)
    if spec.ports:  # the same
        immutable["ports"] = [p.name for p in spec.ports]
    encoded = json.dumps(immutable, sort_keys=True).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def desired_metadata(
    spec: VirtualMachineSpec, namespace: str, name: str, hash_: str
) -> dict[str, str]:
    return {**spec.metadata, NAME_KEY: f"{namespace}/{name}", HASH_KEY: hash_}


@dataclass(frozen=True)
class ServerFix:
    """In-place corrections for a server that is otherwise right."""

    description: str | None = None
    set_metadata: dict[str, str] = field(default_factory=dict)
    remove_metadata: list[str] = field(default_factory=list)
    tags: list[str] | None = None

    @property
    def empty(self) -> bool:
        return (
            self.description is None
            and not self.set_metadata
            and not self.remove_metadata
            and self.tags is None
        )


def plan_fix(
    spec: VirtualMachineSpec, metadata: dict[str, str], uid: str, server: Server
) -> ServerFix:
    """What to change on ``server`` so it matches ``spec`` (hash already equal)."""
    want_description = spec.description or ""
    description = want_description if (server.description or "") != want_description else None
    set_metadata = {k: v for k, v in metadata.items() if server.metadata.get(k) != v}
    remove_metadata = sorted(k for k in server.metadata if k not in metadata)
    missing = [t for t in marker_tags(uid) if t not in server.tags]
    tags = [*server.tags, *missing] if missing else None
    return ServerFix(description, set_metadata, remove_metadata, tags)


def import_mismatches(
    spec: VirtualMachineSpec, server: Server, image_id: str, flavor: tuple[str, str]
) -> list[Change]:
    """What an imported server has that the spec does not ask for, among what Nova cannot
    change in place and shows: its image (by ID) and flavor (by ID, or the name Nova ≥
    2.47 shows). Not checked, because Nova does not show them back: user data, networks
    by name, key, security groups — they are taken as they are. (old = the server's.)"""
    found = []
    if server.image_id != image_id:
        found.append(
            Change("spec.image", server.image_id or "(none: boot from volume)", spec.image)
        )
    if server.flavor not in flavor:
        found.append(Change("spec.flavor", server.flavor, spec.flavor))
    return found


def needs_replacement(server: Server, hash_: str, legacy: str | None = None) -> bool:
    """Does the server's hash differ from the spec's (or, for a server made before
    security groups changed in place, from the legacy hash)? The metadata correction
    then stamps the current hash."""
    return server.metadata.get(HASH_KEY) not in (None, hash_, legacy)


def replacement(server: Server, hash_: str, legacy: str | None = None) -> str | None:
    """Why ``server`` must go, in this order: ``spec`` (a field Nova cannot change in
    place changed), ``deleting`` (deleted behind Kumo's back: build another now),
    ``error`` (Nova put it in ERROR: replaced once its grace period is over); None to
    keep it."""
    if needs_replacement(server, hash_, legacy):
        return "spec"
    if server.status == "DELETING":
        return "deleting"
    if server.status == "ERROR":
        return "error"
    return None


@dataclass(frozen=True)
class GroupRef:
    """A security group as Nova is given it (``ref``: ID or name) and shows it (``name``)."""

    ref: str
    name: str


def security_groups(
    spec: VirtualMachineSpec, namespace: str, store: Store
) -> tuple[list[GroupRef], list[str]]:
    """The groups to give Nova — for a name the namespace has a SecurityGroup object of,
    that object's Neutron group (by ID; Nova shows its Neutron name); else the name as
    it is (the cloud's group) — and the SecurityGroup objects named that are not Ready
    yet (the create waits for them)."""
    given: list[GroupRef] = []
    waiting: list[str] = []
    for name in spec.security_groups:
        body = store.get("SecurityGroup", namespace, name)
        if body is None:
            given.append(GroupRef(name, name))
            continue
        status = body.get("status") or {}
        deleting = (body.get("metadata") or {}).get("deletionTimestamp")
        if status.get("id") and _ready(body) and not deleting:
            given.append(GroupRef(str(status["id"]), str(status.get("name") or name)))
        else:
            waiting.append(name)
    return given, waiting


UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def security_group_changes(
    wanted: list[GroupRef], shown: tuple[str, ...] | None
) -> tuple[list[str], list[str]]:
    """``(refs to add, names to remove)`` to make the server's groups (``shown``: their
    names, as Nova lists them) the wanted ones. Nova gives a server created without any
    the project's ``default``: an empty spec means that one. Nothing when Nova showed no
    groups, or when a group was given by ID (its name cannot be told from here)."""
    if shown is None or any(UUID.match(g.name) for g in wanted):
        return [], []
    want = wanted or [GroupRef("default", "default")]
    names = {g.name for g in want}
    add = [g.ref for g in want if g.name not in shown]
    remove = sorted(n for n in shown if n not in names)
    return add, remove


def _ready(body: Body) -> bool:
    conditions = (body.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


def addresses(server: Server) -> list[dict[str, object]]:
    return [{"network": net, "ip": ip, "version": ver} for net, ip, ver in server.addresses]


def primary_ip(server: Server) -> str | None:
    v4 = [ip for _, ip, ver in server.addresses if ver == 4]
    candidates = v4 or [ip for _, ip, _ in server.addresses]
    return candidates[0] if candidates else None


#: How Nova words a fault that means no host would take the server: the scheduler's own
#: "No valid host", and the ends of a build retried on every host it was given (a late
#: anti-affinity check fails that way: "Exceeded maximum number of retries. Exhausted all
#: hosts available for retrying build failures", Zed).
NO_HOST_FAULTS = ("no valid host", "max scheduling attempts", "exhausted all hosts available")


def fault_reason(fault: str | None) -> str:
    text = (fault or "").lower()
    if any(words in text for words in NO_HOST_FAULTS):
        return "NoValidHost"
    if "quota" in text:
        return "QuotaExceeded"
    return "ServerError"


def replacement_delay(replaced: int) -> float:
    """How long a server in ERROR waits after ``replaced`` earlier replacements."""
    return min(REPLACEMENT_CAP_SECONDS, REPLACEMENT_BASE_SECONDS * 2 ** min(replaced, 20))


def duration(seconds: float) -> str:
    """``45s``, ``4m``, ``1h30m``: rounded up, to say when something happens next."""
    total = max(0, math.ceil(seconds))
    if total < 60:
        return f"{total}s"
    minutes = math.ceil(total / 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, rest = divmod(minutes, 60)
    return f"{hours}h{rest}m" if rest else f"{hours}h"


def replacement_note(replaced: int, since: str, wait: float) -> str:
    """The part of a condition message or event saying where the replacement loop is:
    an absolute time, so the message of a server waiting out its grace period is the
    same on every pass and costs no status write until something changes."""
    at = after(since, wait)
    if replaced == 0:
        return f"replacing it at {at}, {duration(wait)} after it was reported"
    times = "time" if replaced == 1 else "times"
    return f"replaced {replaced} {times}, next attempt at {at}, {duration(wait)} after the last"


def after(timestamp: str, seconds: float) -> str:
    """The RFC 3339 time ``seconds`` (rounded up) after ``timestamp``."""
    then = conditions.parse_rfc3339(timestamp)
    return (then + datetime.timedelta(seconds=math.ceil(seconds))).strftime(conditions.RFC3339)


def user_data_problem(script: str) -> str | None:
    """Why Nova would refuse ``script`` as user_data (its base64 must fit in 65535
    characters), or None. The schema can only bound characters, not bytes."""
    size = len(script.encode())
    encoded = len(base64.b64encode(script.encode()))
    if encoded <= USER_DATA_MAX_BASE64:
        return None
    return (
        f"the script is {size} bytes, {encoded} in base64; Nova takes at most "
        f"{USER_DATA_MAX_BASE64} (a script of at most {INIT_SCRIPT_MAX_BYTES} bytes)"
    )


# -- spec.volumes: attached in place -------------------------------------------------------


@dataclass(frozen=True)
class WantedVolume:
    """One entry of ``spec.volumes``: ``name`` as given (a Volume object's or the cloud
    volume's name or ID), ``id`` once known (None: to look up in the cloud, or waiting)."""

    index: int
    name: str
    device: str | None
    id: str | None = None
    ref: bool = False

    @property
    def field(self) -> str:
        return f"spec.volumes[{self.index}].{'volumeRef' if self.ref else 'name'}"

    def entry(self, volume_id: str) -> dict[str, str]:
        found = {"id": volume_id, "name": self.name}
        return {**found, "device": self.device} if self.device else found


def known_volume_ids(status: Body) -> dict[str, str]:
    """Name as the spec gave it → ID, from the volumes the last status reported: a
    named volume already attached needs no lookup."""
    return {
        str(v["name"]): str(v["id"])
        for v in status.get("volumes") or []
        if v.get("name") and v.get("id")
    }


def volume_changes(
    wanted: list[str], attached: tuple[str, ...], managed: set[str]
) -> tuple[list[str], list[str]]:
    """``(IDs to attach, IDs to detach)``: the wanted ones the server lacks, and those
    Kumo attached (``managed``: in the last status) that the spec no longer names. A
    volume attached by someone else, or the server's boot volume, is left alone."""
    attach = [v for v in dict.fromkeys(wanted) if v not in attached]
    detach = sorted(v for v in attached if v in managed and v not in wanted)
    return attach, detach


def attached_volumes(
    server: Server, wanted: list[WantedVolume], previous: list[Body]
) -> list[dict[str, str]]:
    """``status.volumes``: the spec's volumes the server has, in spec order, then those
    Kumo attached before and has not seen go yet (a detach under way)."""
    found: dict[str, dict[str, str]] = {}
    for w in wanted:
        if w.id and w.id in server.volumes:
            found.setdefault(w.id, w.entry(w.id))
    for v in previous:
        if v.get("id") in server.volumes:
            found.setdefault(str(v["id"]), {k: str(x) for k, x in v.items() if x})
    return list(found.values())

"""Neutron calls: security groups and their rules.

Everything goes through the network proxy's REST methods (``/v2.0`` is the proxy's):
the listings need ``fields`` and tag filters, and the answers are small JSON.

Ownership: a security group carries Neutron tags ``kumo`` and ``kumo-owner=<uid>``.
Neutron refuses tags in the create's body (no ``tag-creation``), so the POST carries the
marker word at the end of the description (kumo/kinds/described.py writes it) and the
tags follow in a second call: a group whose tags never came (the POST's answer lost, a
crash between the calls — the failpoint ``after-security-group-create`` sits there) is
still Kumo's (:func:`kumo.ports.model.described_owner`), listed by the watch and adopted
by the next pass. The listings are therefore of the project's groups, kept when marked
either way (:func:`marked`): one call, as the tag-filtered one was. Rules have no tags:
a rule in Kumo's group is Kumo's; the ones Kumo creates say ``kumo`` in their
description.

Neutron bumps a group's ``revision_number`` whenever one of its rules is created or
deleted: the watch lists the groups without their rules (one call) and reads the rules
only of a group whose revision moved (see :class:`~kumo.cloud.services.networking.watch.SecurityGroupWatcher`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

from openstack import exceptions as os_exc

from kumo.cloud import model
from kumo.cloud.services.networking.rest import NeutronBase
from kumo.cloud.services.networking.watch import SecurityGroupWatcher
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint

D = TypeVar("D", bound=model.Described)

#: What the watch's probe asks for: no rules (their number is what grows).
PROBE_FIELDS = ["id", "name", "description", "tags", "revision_number"]
#: The revision a group gets when Kumo changed its rules: the next listing reads them.
STALE = -1


class SecurityGroupsCalls(NeutronBase):
    # -- plumbing --------------------------------------------------------------------------

    def _group_changed(self, group_id: str, change: Any = None) -> None:
        """Kumo changed the group: apply ``change`` to the cached one, mark its rules to
        be read again, and look again soon."""
        cache = self.watch.of(SecurityGroupWatcher).security_groups

        def stale(group: model.SecurityGroup) -> model.SecurityGroup:
            group = change(group) if change is not None else group
            return dataclasses.replace(group, revision=STALE)

        cache.update(group_id, stale)
        self.watch.nudge(SecurityGroupWatcher.service)

    # -- groups ----------------------------------------------------------------------------

    async def get_security_group(self, group_id: str) -> model.SecurityGroup | None:
        hit = self.watch.of(SecurityGroupWatcher).security_groups.lookup(group_id)
        if isinstance(hit, model.SecurityGroup):
            return hit
        # GONE too: the watch lists Kumo's marked ones only, so one dropped from its
        # listing may live on unmarked (released by Orphan, to be imported by ID).
        return await self.fetch_security_group(group_id)

    async def fetch_security_group(self, group_id: str) -> model.SecurityGroup | None:
        found = await self._get(
            "get security group", self._neutron, "get", f"/security-groups/{group_id}"
        )
        return _group(found["security_group"]) if found is not None else None

    async def list_owned_security_groups(self, uid: str) -> list[model.SecurityGroup]:
        cache = self.watch.of(SecurityGroupWatcher).security_groups
        if cache.answers_for(uid):
            return cache.owned_by(uid)

        async def listing() -> list[model.SecurityGroup]:
            found = await self._call(
                "list security groups", self._neutron_project, "/security-groups", "security_groups"
            )
            groups = [_group(x) for x in found]
            return [g for g in groups if model.described_owner(g) == uid]

        return await self._relist(cache, uid, listing)

    async def find_security_groups_by_name(self, name: str) -> list[model.SecurityGroup]:
        return await self._list_groups({"name": name})

    async def _list_groups(self, params: dict[str, Any]) -> list[model.SecurityGroup]:
        found = await self._call(
            "list security groups",
            self._neutron_list,
            "/security-groups",
            "security_groups",
            params,
        )
        return [_group(x) for x in found]

    async def security_group_versions(self) -> list[model.SecurityGroup]:
        """Kumo's groups without their rules: the project's, kept when marked."""
        found = await self._call(
            "list security groups",
            self._neutron_project,
            "/security-groups",
            "security_groups",
            {"fields": PROBE_FIELDS},
        )
        return marked(_group(x) for x in found)

    async def fetch_security_group_rules(self, group_id: str) -> list[model.SecurityGroupRule]:
        found = await self._call(
            "list security group rules",
            self._neutron_list,
            "/security-group-rules",
            "security_group_rules",
            {"security_group_id": group_id},
        )
        return _rules(found)

    async def security_groups_in_use(self, group_id: str) -> list[str]:
        found = await self._call(
            "list ports using security group",
            self._neutron_list,
            "/ports",
            "ports",
            {"security_groups": group_id, "fields": ["id"]},
        )
        return sorted(str(p["id"]) for p in found)

    async def create_security_group(
        self, *, name: str, description: str, tags: list[str]
    ) -> model.SecurityGroup:
        """Create the group with ``description`` (carrying the marker word), then tag it."""
        body = {"name": name, "description": description}
        created = await self._create(
            "create security group",
            self._neutron,
            "post",
            "/security-groups",
            resolved=[],
            in_doubt=(
                self.watch.of(SecurityGroupWatcher).security_groups,
                model.owner_of(tags) or "",
            ),
            json={"security_group": body},
            field="spec",
        )
        group = _group(created["security_group"])
        self.watch.of(SecurityGroupWatcher).security_groups.put(
            group
        )  # marked by its description already
        failpoint("after-security-group-create")  # crash tests: adopted by its description
        await self._put_tags(group.id, tags)
        group = dataclasses.replace(group, tags=list(tags))
        self.watch.of(SecurityGroupWatcher).security_groups.put(group)
        self.watch.nudge(SecurityGroupWatcher.service)
        return group

    async def _put_tags(self, group_id: str, tags: list[str]) -> None:
        await self._call(
            "set security group tags",
            self._neutron,
            "put",
            f"/security-groups/{group_id}/tags",
            json={"tags": tags},
        )

    async def update_security_group(self, group_id: str, *, description: str | None) -> None:
        await self._call(
            "update security group",
            self._neutron,
            "put",
            f"/security-groups/{group_id}",
            json={"security_group": {"description": description or ""}},
            field="spec.description",
        )
        self._group_changed(
            group_id, lambda g: dataclasses.replace(g, description=description or "")
        )

    async def set_security_group_tags(self, group_id: str, tags: list[str]) -> None:
        await self._put_tags(group_id, tags)
        self._group_changed(group_id, lambda g: dataclasses.replace(g, tags=list(tags)))

    async def delete_security_group(self, group_id: str) -> None:
        """Delete; one already gone is fine. Neutron answers 409 while a port uses it
        (raised as CloudBusy: the caller waits)."""
        try:
            await self._call(
                "delete security group", self._neutron, "delete", f"/security-groups/{group_id}"
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self.watch.of(SecurityGroupWatcher).security_groups.forget(group_id)
        self.watch.nudge(SecurityGroupWatcher.service)

    # -- rules -----------------------------------------------------------------------------

    async def create_security_group_rule(
        self,
        group_id: str,
        *,
        direction: str,
        ethertype: str,
        protocol: str | None,
        port_range_min: int | None,
        port_range_max: int | None,
        remote_ip_prefix: str | None,
        remote_group_id: str | None,
        description: str,
    ) -> model.SecurityGroupRule:
        body = {
            "security_group_id": group_id,
            "direction": direction,
            "ethertype": ethertype,
            "protocol": protocol,
            "port_range_min": port_range_min,
            "port_range_max": port_range_max,
            "remote_ip_prefix": remote_ip_prefix,
            "remote_group_id": remote_group_id,
            "description": description,
        }
        try:
            created = await self._call(
                "create security group rule",
                self._neutron,
                "post",
                "/security-group-rules",
                json={"security_group_rule": {k: v for k, v in body.items() if v is not None}},
                field="spec.rules",
            )
        except BaseException:
            self._group_changed(group_id)  # it may exist now: read the rules again
            raise
        (rule,) = _rules([created["security_group_rule"]])
        self._group_changed(group_id, lambda g: dataclasses.replace(g, rules=(*g.rules, rule)))
        return rule

    async def delete_security_group_rule(self, group_id: str, rule_id: str) -> None:
        """Delete; one already gone is fine."""
        try:
            await self._call(
                "delete security group rule",
                self._neutron,
                "delete",
                f"/security-group-rules/{rule_id}",
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self._group_changed(
            group_id,
            lambda g: dataclasses.replace(g, rules=tuple(r for r in g.rules if r.id != rule_id)),
        )


def _group(x: dict[str, Any]) -> model.SecurityGroup:
    return model.SecurityGroup(
        id=x["id"],
        name=x.get("name") or "",
        revision=int(x.get("revision_number") or 0),
        description=x.get("description"),
        tags=list(x.get("tags") or []),
        rules=tuple(_rules(x.get("security_group_rules") or [])),
    )


def _rules(listed: list[dict[str, Any]]) -> list[model.SecurityGroupRule]:
    rules = [
        model.SecurityGroupRule(
            id=r["id"],
            direction=r.get("direction") or "",
            ethertype=r.get("ethertype") or "IPv4",
            protocol=r.get("protocol"),
            port_range_min=r.get("port_range_min"),
            port_range_max=r.get("port_range_max"),
            remote_ip_prefix=r.get("remote_ip_prefix"),
            remote_group_id=r.get("remote_group_id"),
            description=r.get("description"),
        )
        for r in listed
    ]
    return sorted(rules, key=lambda r: r.id)


def marked(resources: Iterable[D]) -> list[D]:
    """Those carrying Kumo's marker, by tag or (tags not set yet) by description word: what
    a project-wide Neutron listing keeps for the watch."""
    return [r for r in resources if model.MANAGED_TAG in r.tags or model.described_owner(r)]

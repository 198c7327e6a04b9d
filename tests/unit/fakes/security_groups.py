"""An in-memory Neutron (security groups and rules) with the manners that matter to Kumo.

* A new group gets Neutron's two default egress rules (IPv4 and IPv6, any address).
* Creating or deleting a rule bumps its group's ``revision``, as ``revision_number``.
* A second rule equal to one the group has is refused (409 ``SecurityGroupRuleExists``,
  which the adapter raises as CloudBusy).
* A group some port uses cannot be deleted (409 ``SecurityGroupInUse``): ``ports``.
* A create is Neutron's two calls as the adapter makes them: the POST (the marker only
  in the description) and the tags. ``lose_creates``: that many creates lose their
  answer — the group exists, untagged, and the caller gets a 502.
* ``calls`` counts every call by name (the watch's cost is asserted from it).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from kumo.cloud import model
from kumo.engine.errors import TransientError
from kumo.ports import SecurityGroupsPort

LOST = "create security group: 502 Bad Gateway (the answer was lost; the group was made)"

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


def _same(a: model.SecurityGroupRule, b: model.SecurityGroupRule) -> bool:
    fields = (
        "direction",
        "ethertype",
        "protocol",
        "port_range_min",
        "port_range_max",
        "remote_ip_prefix",
        "remote_group_id",
    )
    return all(getattr(a, f) == getattr(b, f) for f in fields)


class FakeSecurityGroups(SecurityGroupsPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self) -> None:
        self.groups: dict[str, model.SecurityGroup] = {}
        self.ports: dict[str, list[str]] = {}  # group ID → ports using it
        self.calls: list[str] = []
        self.lose_creates = 0

    # -- helpers for tests (playing a user or the cloud) ------------------------------------

    def only(self) -> model.SecurityGroup:
        (group,) = self.groups.values()
        return group

    def add_rule_out_of_band(self, group_id: str, **fields: object) -> model.SecurityGroupRule:
        rule = model.SecurityGroupRule(
            id=new_id("rule"),
            direction=str(fields.pop("direction", "ingress")),
            ethertype=str(fields.pop("ethertype", "IPv4")),
            **fields,  # type: ignore[arg-type]
        )
        self._set_rules(group_id, (*self.groups[group_id].rules, rule))
        return rule

    def delete_rule_out_of_band(self, group_id: str, rule_id: str) -> None:
        rules = tuple(r for r in self.groups[group_id].rules if r.id != rule_id)
        self._set_rules(group_id, rules)

    def _set_rules(self, group_id: str, rules: tuple[model.SecurityGroupRule, ...]) -> None:
        group = self.groups[group_id]
        self.groups[group_id] = replace(group, rules=rules, revision=group.revision + 1)

    # -- the adapter's surface ----------------------------------------------------------------

    async def get_security_group(self, group_id: str) -> model.SecurityGroup | None:
        self.calls.append("get_security_group")
        return self.groups.get(group_id)

    async def fetch_security_group(self, group_id: str) -> model.SecurityGroup | None:
        self.calls.append("fetch_security_group")
        return self.groups.get(group_id)

    async def list_owned_security_groups(self, uid: str) -> list[model.SecurityGroup]:
        self.calls.append("list_owned_security_groups")
        return [g for g in self.groups.values() if model.described_owner(g) == uid]

    async def find_security_groups_by_name(self, name: str) -> list[model.SecurityGroup]:
        self.calls.append("find_security_groups_by_name")
        return [g for g in self.groups.values() if g.name == name]

    async def security_group_versions(self) -> list[model.SecurityGroup]:
        self.calls.append("security_group_versions")
        return [
            replace(g, rules=())
            for g in self.groups.values()
            if model.MANAGED_TAG in g.tags or model.described_owner(g)
        ]

    async def fetch_security_group_rules(self, group_id: str) -> list[model.SecurityGroupRule]:
        self.calls.append("fetch_security_group_rules")
        return sorted(self.groups[group_id].rules, key=lambda r: r.id)

    async def security_groups_in_use(self, group_id: str) -> list[str]:
        return sorted(self.ports.get(group_id, []))

    async def create_security_group(
        self, *, name: str, description: str, tags: list[str]
    ) -> model.SecurityGroup:
        self.calls.append("create_security_group")
        defaults = tuple(
            model.SecurityGroupRule(new_id("rule"), "egress", ethertype)
            for ethertype in ("IPv4", "IPv6")
        )
        group = model.SecurityGroup(new_id("sg"), name, 1, description, [], defaults)
        self.groups[group.id] = group
        if self.lose_creates:
            self.lose_creates -= 1
            raise TransientError("CloudUnavailable", LOST)
        await self.set_security_group_tags(group.id, tags)
        return self.groups[group.id]

    async def update_security_group(self, group_id: str, *, description: str | None) -> None:
        self.calls.append("update_security_group")
        group = self.groups[group_id]
        self.groups[group_id] = replace(
            group, description=description or "", revision=group.revision + 1
        )

    async def set_security_group_tags(self, group_id: str, tags: list[str]) -> None:
        self.calls.append("set_security_group_tags")
        self.groups[group_id] = replace(self.groups[group_id], tags=list(tags))

    async def delete_security_group(self, group_id: str) -> None:
        self.calls.append("delete_security_group")
        if self.ports.get(group_id):
            raise TransientError("CloudBusy", f"Security Group {group_id} in use.")
        self.groups.pop(group_id, None)

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
        self.calls.append("create_security_group_rule")
        rule = model.SecurityGroupRule(
            new_id("rule"),
            direction,
            ethertype,
            protocol,
            port_range_min,
            port_range_max,
            remote_ip_prefix,
            remote_group_id,
            description,
        )
        group = self.groups[group_id]
        if any(_same(rule, r) for r in group.rules):
            raise TransientError("CloudBusy", "Security group rule already exists.")
        self._set_rules(group_id, (*group.rules, rule))
        return rule

    async def delete_security_group_rule(self, group_id: str, rule_id: str) -> None:
        self.calls.append("delete_security_group_rule")
        if group_id in self.groups:
            self.delete_rule_out_of_band(group_id, rule_id)

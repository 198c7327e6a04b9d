"""The Neutron watcher: one listing of Kumo's groups without rules per interval, and the
rules of a group read again only when its ``revision_number`` moved — so the idle cost
is one call whatever the number of groups and rules, and a rule changed by hand reaches
its owner within one listing."""

from __future__ import annotations

import asyncio

from kumo.cloud import model
from kumo.cloud.services.networking.watch import SecurityGroupWatcher
from kumo.ports.model import Marked
from tests.unit.cloud.test_watch import Lists, refresh, synced
from tests.unit.fakes.security_groups import FakeSecurityGroups


def neutron_with(groups: int) -> tuple[FakeSecurityGroups, list[model.SecurityGroup]]:
    neutron = FakeSecurityGroups()
    made = [
        asyncio.run(
            neutron.create_security_group(
                name=f"g{i}", description=None, tags=model.marker_tags(f"uid-{i}")
            )
        )
        for i in range(groups)
    ]
    asyncio.run(neutron.create_security_group(name="theirs", description=None, tags=[]))
    return neutron, made


def test_idle_cost_is_one_listing_whatever_the_number_of_groups() -> None:
    for n in (10, 100):
        neutron, _ = neutron_with(n)
        watch, seen = synced(Lists(neutron))
        assert neutron.calls.count("fetch_security_group_rules") == n, "the first: every group"
        neutron.calls.clear()
        for _ in range(5):
            refresh(watch, "networking.security-groups")
        assert neutron.calls == ["security_group_versions"] * 5
        assert seen.owners == []


def test_a_rule_changed_by_hand_is_read_for_that_group_only_and_reported() -> None:
    neutron, groups = neutron_with(3)
    watch, seen = synced(Lists(neutron))
    target = groups[1]
    neutron.add_rule_out_of_band(target.id, protocol="tcp", remote_ip_prefix="0.0.0.0/0")
    neutron.calls.clear()
    refresh(watch, "networking.security-groups")
    assert neutron.calls == ["security_group_versions", "fetch_security_group_rules"]
    assert seen.owners == [{"uid-1"}]
    cached = watch.of(SecurityGroupWatcher).security_groups.lookup(target.id)
    assert isinstance(cached, model.SecurityGroup) and len(cached.rules) == 3


def test_a_group_deleted_by_hand_is_gone_and_marked_groups_are_swept_through_it() -> None:
    neutron, groups = neutron_with(2)
    watch, seen = synced(Lists(neutron))
    assert watch.marked() == [
        Marked("security_group", g.id, g.name, f"uid-{i}") for i, g in enumerate(groups)
    ]
    del neutron.groups[groups[0].id]
    refresh(watch, "networking.security-groups")
    assert seen.owners == [{"uid-0"}]
    asyncio.run(watch.delete_marked(watch.marked()[0]))
    assert groups[1].id not in neutron.groups

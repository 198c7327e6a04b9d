"""Keypairs belong to an OpenStack *user*, not a project: two clusters whose Kumos share a
user list each other's keypairs. With the cluster in the marker word, neither takes the
other's for its own: not adopted, not a duplicate, not in the orphan sweep's listing, not
deleted with its own object."""

from __future__ import annotations

from kumo.api.kinds import KEY_PAIR
from kumo.cloud.model import Marked, keypair_owner, set_cluster
from kumo.cloud.services.compute.watch import KeyPairWatcher
from kumo.kinds.keypair.actuator import KeyPairActuator
from tests.unit.cloud.test_watch import Lists, synced
from tests.unit.fakes import World
from tests.unit.fakes.keypairs import KEY, OTHER_KEY, FakeKeyPairs

#: Two clusters; their objects have the same UID (one restored from the other's backup,
#: say), so only the cluster in the marker tells their keypairs apart.
EAST, WEST = "ea5700000001", "4e5700000002"
UID = "uid-deploy"


def kumo_of(cluster: str, user: FakeKeyPairs, spec: dict[str, str]) -> World:
    """One cluster's KeyPair ``deploy`` (the same UID on both), converged by its Kumo."""
    set_cluster(cluster)
    world = World(cloud=user)
    world.add(KEY_PAIR, "deploy", spec, uid=UID)
    world.converge(KeyPairActuator(), "deploy")
    return world


def marked(cluster: str, user: FakeKeyPairs) -> list[Marked]:
    """What the orphan sweep of ``cluster``'s Kumo is given (its watch's ``marked()``)."""
    set_cluster(cluster)
    watch, _ = synced(Lists(user))
    assert watch.of(KeyPairWatcher).keypairs.live_count(UID) <= 1, "no duplicate of its own"
    return watch.marked()


def test_two_clusters_sharing_a_user_never_take_each_others_keypairs() -> None:
    user = FakeKeyPairs()  # one OpenStack user: one list of keypairs for both clusters
    kumo_of(EAST, user, {"publicKey": KEY})
    east_key = user.keypairs["default-deploy"]
    assert east_key.public_key.endswith(f" kumo-owner={UID}@{EAST}")
    set_cluster(WEST)
    assert keypair_owner(east_key.public_key) == f"{UID}@{EAST}", "no object of west's"
    assert marked(WEST, user) == [], "west's sweep never sees east's keypair"

    west = kumo_of(WEST, user, {"publicKey": OTHER_KEY, "name": "west-deploy"})
    assert west.obj(KEY_PAIR, "deploy").status["keyName"] == "west-deploy"
    assert "Adopted" not in west.events.reasons(), "it made its own"
    assert user.keypairs["default-deploy"] == east_key, "east's untouched"
    assert marked(WEST, user) == [Marked("keypair", "west-deploy", "west-deploy", UID)]
    assert marked(EAST, user) == [Marked("keypair", "default-deploy", "default-deploy", UID)]

    set_cluster(WEST)  # west's object goes: its keypair alone goes with it
    west.stored("KeyPair", "deploy")["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    for _ in range(3):  # delete, then see it gone
        if west.store.get("KeyPair", "default", "deploy") is not None:
            west.run(KeyPairActuator(), "deploy")
    assert west.store.get("KeyPair", "default", "deploy") is None
    assert list(user.keypairs) == ["default-deploy"]

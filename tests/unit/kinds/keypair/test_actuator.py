"""KeyPair: the engine drives the actuator against the in-memory Nova keypairs; tests feed
objects and cloud state in and check keypairs, status and events out."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from kumo.api.kinds import KEY_PAIR
from kumo.cloud.model import keypair_owner, owner_word
from kumo.engine.errors import TransientError
from kumo.kinds.keypair.actuator import KeyPairActuator
from tests.unit.fakes import World
from tests.unit.fakes.keypairs import KEY, KEY_FINGERPRINT, OTHER_KEY, FakeKeyPairs

NAME = "default-deploy"  # <namespace>-<name>
MARKER = owner_word("uid-deploy")
DELETING = "2026-11-22T00:00:00Z"


def new_world(**spec: Any) -> World:
    world = World(cloud=FakeKeyPairs())
    world.add(
        KEY_PAIR, "deploy", {"publicKey": KEY, **spec} if "publicKeyFrom" not in spec else spec
    )
    return world


def cloud(world: World) -> FakeKeyPairs:
    return world.cloud_as(FakeKeyPairs)


def run(world: World, name: str = "deploy") -> float | None:
    return world.run(KeyPairActuator(), name)


def converge(world: World, name: str = "deploy") -> int:
    return world.converge(KeyPairActuator(), name)


def status(world: World, name: str = "deploy") -> dict[str, Any]:
    return world.obj(KEY_PAIR, name).status


def ready(world: World, name: str = "deploy") -> dict[str, Any]:
    return world.condition("KeyPair", name)


def set_spec(world: World, **changes: Any) -> None:
    body = world.stored("KeyPair", "deploy")
    body["spec"] = {**body["spec"], **changes}
    body["metadata"]["generation"] += 1


def delete(world: World, name: str = "deploy") -> None:
    world.delete("KeyPair", name)


def keys(world: World) -> dict[str, str]:
    return {k.name: k.public_key for k in cloud(world).keypairs.values()}


# -- create ------------------------------------------------------------------------------------


def test_create_marks_the_key_records_the_name_at_once_then_is_ready() -> None:
    world = new_world(publicKey=f"{KEY} me@laptop\n")
    assert run(world) == 0.5
    assert keys(world) == {NAME: f"{KEY} me@laptop {MARKER}"}
    assert (status(world)["id"], status(world)["keyName"]) == (NAME, NAME)
    assert ready(world)["status"] == "False"
    assert world.events.reasons()[0] == "Created"

    assert run(world) is None
    st = status(world)
    assert ready(world)["status"] == "True" and st["phase"] == "Ready"
    assert (st["fingerprint"], st["keyType"]) == (KEY_FINGERPRINT, "ssh-ed25519")
    assert KEY_FINGERPRINT in ready(world)["message"]

    calls = len(cloud(world).calls)
    assert run(world) is None  # converged: reads only
    assert not {"create_keypair", "delete_keypair"} & set(cloud(world).calls[calls:])


def test_spec_name_is_the_nova_name() -> None:
    world = new_world(name="deploy key")
    converge(world)
    assert list(keys(world)) == ["deploy key"]
    assert status(world)["keyName"] == "deploy key"


def test_the_key_from_a_config_map_and_a_secret() -> None:
    world = new_world(publicKeyFrom={"configMapRef": {"name": "keys", "key": "deploy.pub"}})
    run(world)
    assert ready(world)["reason"] == "ConfigMapNotFound"
    assert ready(world)["message"].startswith("spec.publicKeyFrom.configMapRef:")
    world.store.put(
        "ConfigMap",
        {"metadata": {"name": "keys", "namespace": "default"}, "data": {"deploy.pub": KEY}},
    )
    converge(world)
    assert keys(world) == {NAME: f"{KEY} {MARKER}"}

    world = new_world(publicKeyFrom={"secretRef": {"name": "keys", "key": "pub"}})
    secret = base64.b64encode(f"{OTHER_KEY} ops\n".encode()).decode()
    world.store.put(
        "Secret", {"metadata": {"name": "keys", "namespace": "default"}, "data": {"pub": secret}}
    )
    converge(world)
    assert keys(world) == {NAME: f"{OTHER_KEY} ops {MARKER}"}
    assert world.kube.secret_reads == [("default", "keys")] * len(world.kube.secret_reads)


def test_a_bad_key_is_invalid_naming_the_field_and_creates_nothing() -> None:
    world = new_world(publicKey="ssh-ed25519 not-a-key")
    assert run(world) == 60.0
    assert ready(world)["reason"] == "InvalidPublicKey"
    assert ready(world)["message"].startswith("spec.publicKey: the ssh-ed25519 key is not valid")
    world = new_world(publicKeyFrom={"configMapRef": {"name": "keys", "key": "k"}})
    world.store.put(
        "ConfigMap",
        {"metadata": {"name": "keys", "namespace": "default"}, "data": {"k": "hello"}},
    )
    run(world)
    assert ready(world)["reason"] == "InvalidPublicKey"
    assert ready(world)["message"].startswith("spec.publicKeyFrom.configMapRef: starts with")
    assert keys(world) == {}


# -- drift and changes ----------------------------------------------------------------------------


def test_a_keypair_deleted_by_hand_is_made_again() -> None:
    world = new_world()
    converge(world)
    cloud(world).delete_out_of_band(NAME)
    converge(world)
    assert keys(world) == {NAME: f"{KEY} {MARKER}"}
    assert world.events.reasons().count("Created") == 2


def test_a_new_key_replaces_the_keypair_under_the_same_name() -> None:
    world = new_world()
    converge(world)
    set_spec(world, publicKey=f"{OTHER_KEY} new")
    assert run(world) == 0.5, "deleted and made again in one pass"
    assert keys(world) == {NAME: f"{OTHER_KEY} new {MARKER}"}
    assert cloud(world).calls.count("delete_keypair") == 1
    replacing = [e for e in world.events.events if e[2] == "Replacing"]
    assert len(replacing) == 1 and "a different key" in replacing[0][3]
    converge(world)
    assert status(world)["fingerprint"] != KEY_FINGERPRINT


def test_a_new_name_replaces_it_unless_someone_elses_keypair_holds_that_name() -> None:
    world = new_world()
    converge(world)
    theirs = cloud(world).add("taken", OTHER_KEY)
    set_spec(world, name="taken")
    run(world)
    assert ready(world)["reason"] == "KeyPairExists"
    assert ready(world)["message"].startswith("spec.name: keypair 'taken' already exists")
    assert keys(world) == {NAME: f"{KEY} {MARKER}", "taken": theirs.public_key}, "nothing deleted"

    set_spec(world, name="free")
    converge(world)
    assert keys(world) == {"free": f"{KEY} {MARKER}", "taken": theirs.public_key}
    assert status(world)["id"] == "free"


def test_a_foreign_keypair_holding_the_name_is_left_alone() -> None:
    world = new_world()
    theirs = cloud(world).add(NAME, f"{KEY} hand-made")
    assert run(world) == 60.0
    assert ready(world)["reason"] == "KeyPairExists"
    assert "does not carry Kumo's marker" in ready(world)["message"]
    other = new_world()
    cloud(other).add(NAME, f"{KEY} kumo-owner=uid-other")
    run(other)
    assert "another Kumo object (uid uid-other)" in ready(other)["message"]

    delete(world)  # finalizing touches nothing that is not Kumo's either
    assert run(world) is None
    assert keys(world) == {NAME: theirs.public_key}
    assert world.store.get("KeyPair", "default", "deploy") is None


def test_status_naming_a_foreign_keypair_is_never_touched() -> None:
    world = new_world(publicKey=OTHER_KEY)
    theirs = cloud(world).add(NAME, f"{KEY} team-x")
    world.stored("KeyPair", "deploy")["status"] = {"id": NAME}
    run(world)
    assert ready(world)["reason"] == "NotOwned"
    delete(world)
    converge(world)
    assert keys(world) == {NAME: theirs.public_key}, "neither replaced nor deleted"


def test_adopts_its_keypair_after_a_crash_and_deletes_a_duplicate() -> None:
    """A crash between a create and the status write, twice (the second after a rename):
    both carry the marker; the one with the spec's name is kept."""
    world = new_world()
    cloud(world).add("old-name", f"{KEY} {MARKER}")
    cloud(world).add(NAME, f"{KEY} {MARKER}")
    converge(world)
    assert keys(world) == {NAME: f"{KEY} {MARKER}"}
    assert {"Adopted", "DuplicateDeleted"} <= set(world.events.reasons())
    assert "create_keypair" not in cloud(world).calls


# -- import ---------------------------------------------------------------------------------------


def test_import_takes_over_a_keypair_with_the_same_key_by_making_it_again_marked() -> None:
    world = new_world(name="legacy", publicKey=f"{KEY} mine", **{"import": {"name": "legacy"}})
    cloud(world).add("legacy", f"{KEY} made by hand")
    run(world)
    assert keys(world) == {"legacy": f"{KEY} mine {MARKER}"}, "same name, same key, marked"
    assert status(world)["id"] == "legacy"
    assert "Imported" in world.events.reasons()
    converge(world)
    assert ready(world)["status"] == "True"


def test_import_of_another_key_or_name_is_a_mismatch_and_touches_nothing() -> None:
    world = new_world(name="legacy", publicKey=OTHER_KEY, **{"import": {"name": "legacy"}})
    theirs = cloud(world).add("legacy", f"{KEY} made by hand")
    run(world)
    assert ready(world)["reason"] == "ImportMismatch"
    assert ready(world)["message"].startswith("spec.publicKey: keypair legacy cannot be imported")
    assert KEY_FINGERPRINT in ready(world)["message"], "keys are shown by fingerprint"

    world = new_world(publicKey=KEY, **{"import": {"name": "legacy"}})  # spec.name unset
    cloud(world).add("legacy", theirs.public_key)
    run(world)
    assert ready(world)["reason"] == "ImportMismatch"
    assert ready(world)["message"].startswith("spec.name:")
    assert keys(world) == {"legacy": theirs.public_key}


def test_import_refuses_another_objects_keypair() -> None:
    world = new_world(name="legacy", **{"import": {"id": "legacy"}})
    cloud(world).add("legacy", f"{KEY} kumo-owner=uid-other")
    run(world)
    assert ready(world)["reason"] == "AlreadyOwned"
    assert keys(world) == {"legacy": f"{KEY} kumo-owner=uid-other"}


def test_a_crash_while_an_import_makes_the_keypair_again_rebuilds_it_from_the_spec() -> None:
    world = new_world(name="legacy", **{"import": {"name": "legacy"}})
    cloud(world).add("legacy", KEY)
    real_create = cloud(world).create_keypair

    async def lost(name: str, public_key: str) -> Any:
        raise TransientError("CloudUnreachable", "create keypair: connection reset")

    cloud(world).create_keypair = lost  # type: ignore[method-assign]
    run(world)
    assert keys(world) == {}, "deleted, not made again"
    assert status(world)["id"] == "legacy", "the name was recorded before the delete"
    cloud(world).create_keypair = real_create  # type: ignore[method-assign]
    converge(world)
    assert keys(world) == {"legacy": f"{KEY} {MARKER}"}
    assert "ImportedKeypairGone" in world.events.reasons()


# -- Observe ---------------------------------------------------------------------------------------


def test_observe_reports_another_key_as_drift_naming_the_field_and_changes_nothing() -> None:
    world = new_world(
        name="legacy",
        publicKey=OTHER_KEY,
        managementPolicy="Observe",
        **{"import": {"name": "legacy"}},
    )
    cloud(world).add("legacy", KEY)
    assert run(world) == 30.0
    drift = status(world)["drift"]
    assert drift[0]["field"] == "spec.publicKey"
    assert drift[0]["actual"] == KEY_FINGERPRINT
    assert ready(world)["reason"] == "Drifted"
    assert keys(world) == {"legacy": KEY}


def test_observe_of_an_imported_keypair_with_the_same_key_is_in_sync() -> None:
    world = new_world(name="legacy", managementPolicy="Observe", **{"import": {"name": "legacy"}})
    cloud(world).add("legacy", KEY)
    run(world)
    assert ready(world)["status"] == "True"
    assert status(world)["drift"] == []
    assert (status(world)["id"], status(world)["fingerprint"]) == ("legacy", KEY_FINGERPRINT)
    assert keys(world) == {"legacy": KEY}, "not even the marker"


def test_observe_reports_a_changed_key_of_its_own_keypair_without_calling_it_missing() -> None:
    world = new_world()
    converge(world)
    set_spec(world, publicKey=OTHER_KEY, managementPolicy="Observe")
    run(world)
    assert ready(world)["reason"] == "Drifted"
    assert {d["field"] for d in status(world)["drift"]} >= {"spec.publicKey"}
    assert keys(world) == {NAME: f"{KEY} {MARKER}"}


# -- deletion ------------------------------------------------------------------------------------


def test_delete_removes_the_keypair_then_the_finalizer() -> None:
    world = new_world()
    converge(world)
    delete(world)
    assert run(world) == 0.5
    assert keys(world) == {}
    assert run(world) is None
    assert world.store.get("KeyPair", "default", "deploy") is None


def test_orphan_makes_it_again_released_and_an_import_takes_it_back() -> None:
    world = new_world(publicKey=f"{KEY} me", deletionPolicy="Orphan")
    converge(world)
    delete(world)
    assert run(world) is None
    assert world.store.get("KeyPair", "default", "deploy") is None
    assert keys(world) == {NAME: f"{KEY} me kumo-orphan=uid-deploy"}
    assert keypair_owner(keys(world)[NAME]) is None, "no longer anyone's: the sweep leaves it"
    assert "Released" in world.events.reasons()

    world.add(
        KEY_PAIR,
        "again",
        {"name": NAME, "publicKey": KEY, "import": {"name": NAME}},
        uid="uid-again",
    )
    converge(world, "again")
    assert keys(world) == {NAME: f"{KEY} {owner_word('uid-again')}"}, "orphan mark gone"


def test_a_crash_in_the_middle_of_a_release_puts_the_keypair_back() -> None:
    world = new_world(deletionPolicy="Orphan")
    converge(world)
    delete(world)
    real_create = cloud(world).create_keypair

    async def lost(name: str, public_key: str) -> Any:
        raise TransientError("CloudUnreachable", "create keypair: connection reset")

    cloud(world).create_keypair = lost  # type: ignore[method-assign]
    run(world)
    assert keys(world) == {}
    assert world.store.get("KeyPair", "default", "deploy") is not None, "finalizer kept"
    cloud(world).create_keypair = real_create  # type: ignore[method-assign]
    assert run(world) is None
    assert keys(world) == {NAME: f"{KEY} kumo-orphan=uid-deploy"}
    assert world.store.get("KeyPair", "default", "deploy") is None


@pytest.mark.parametrize("policy", ["Delete", "Orphan"])
def test_deleting_an_object_that_never_made_its_keypair_is_done(policy: str) -> None:
    world = new_world(deletionPolicy=policy)
    body = world.stored("KeyPair", "deploy")
    body["metadata"].update(deletionTimestamp=DELETING, finalizers=[KEY_PAIR.finalizer])
    assert run(world) is None
    assert world.store.get("KeyPair", "default", "deploy") is None
    assert not asyncio.run(cloud(world).fetch_keypairs())

"""Nova keypair calls of OpenStackCloud on REST responses captured from the lab's Nova:
plain values with the public key as stored, None for a missing one, the cache kept
after Kumo's own writes, and a name taken retried like any 409."""

from __future__ import annotations

import requests
import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.cache import GONE
from kumo.cloud.services.compute.watch import KeyPairWatcher
from tests.unit.cloud.rest import NOVA, recorded
from tests.unit.cloud.test_adapter import fails, run

NAME = "kumo-record"
KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIuJHkoy6WhJgIhZA/DE9yltqIlYP/KEgvPeU+Y7AcUe "
    "me@laptop kumo-owner=uid-deploy"
)
FINGERPRINT = "c3:84:19:7a:8d:87:23:67:8f:28:73:cc:50:c9:6e:cb"


def test_the_listing_gives_every_keypair_with_its_public_key(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(f"{NOVA}/os-keypairs", json=recorded("nova_keypairs.json"))
    (keypair,) = run(cloud.fetch_keypairs())
    assert keypair == model.KeyPair(NAME, KEY, FINGERPRINT, "ssh")
    assert model.keypair_owner(keypair.public_key) == "uid-deploy"
    assert keypair.id == NAME


def test_get_keypair_asks_nova_until_the_watch_has_listed_it_then_the_cache(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    missing = requests_mock.get(
        f"{NOVA}/os-keypairs/nope", status_code=404, json=recorded("nova_keypair_not_found.json")
    )
    assert run(cloud.get_keypair("nope")) is None
    assert missing.call_count == 1
    cache = cloud.watch.of(KeyPairWatcher).keypairs
    cache.replace(cache.begin(), [model.KeyPair(NAME, KEY)])
    assert run(cloud.get_keypair(NAME)) == model.KeyPair(NAME, KEY)
    cache.replace(cache.begin(), [])
    assert cache.lookup(NAME) is GONE
    assert run(cloud.get_keypair(NAME)) is None, "listed gone: no call"


def test_create_sends_the_key_as_given_and_caches_it(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    cloud.watch.of(KeyPairWatcher).keypairs.replace(
        cloud.watch.of(KeyPairWatcher).keypairs.begin(), []
    )  # the watch listed: none
    created = requests_mock.post(f"{NOVA}/os-keypairs", json=recorded("nova_keypair_created.json"))
    keypair = run(cloud.create_keypair(NAME, KEY))
    assert created.last_request.json() == {"keypair": {"name": NAME, "public_key": KEY}}
    assert keypair == model.KeyPair(NAME, KEY, FINGERPRINT, "ssh")
    assert cloud.watch.of(KeyPairWatcher).keypairs.lookup(NAME) == keypair
    assert run(cloud.list_owned_keypairs("uid-deploy")) == [keypair]


def test_a_name_taken_is_a_409_retried_and_a_bad_key_is_rejected(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(
        f"{NOVA}/os-keypairs", status_code=409, json=recorded("nova_keypair_exists_409.json")
    )
    error = fails(cloud.create_keypair(NAME, KEY))
    assert error.reason == "CloudBusy" and "already exists" in error.message
    requests_mock.post(
        f"{NOVA}/os-keypairs",
        status_code=400,
        json={"badRequest": {"code": 400, "message": "Keypair data is invalid: failed to "
                             "generate fingerprint"}},
    )  # fmt: skip
    error = fails(cloud.create_keypair(NAME, "ssh-ed25519 AAAA"))
    assert (error.reason, error.field) == ("CloudRejected", "spec.publicKey")


def test_delete_forgets_it_and_a_missing_one_is_fine(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    cache = cloud.watch.of(KeyPairWatcher).keypairs
    cache.replace(cache.begin(), [model.KeyPair(NAME, KEY)])
    requests_mock.delete(f"{NOVA}/os-keypairs/{NAME}", status_code=202)
    run(cloud.delete_keypair(NAME))
    assert cache.lookup(NAME) is GONE
    requests_mock.delete(
        f"{NOVA}/os-keypairs/{NAME}",
        status_code=404,
        json=recorded("nova_keypair_not_found.json"),
    )
    run(cloud.delete_keypair(NAME))


def test_a_lost_create_answer_makes_the_owner_list_nova_not_the_cache(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    cache = cloud.watch.of(KeyPairWatcher).keypairs
    cache.replace(cache.begin(), [])  # synced: nothing
    requests_mock.post(f"{NOVA}/os-keypairs", exc=requests.exceptions.ConnectionError)
    assert fails(cloud.create_keypair(NAME, KEY)).reason == "CloudUnreachable"
    listing = requests_mock.get(f"{NOVA}/os-keypairs", json=recorded("nova_keypairs.json"))
    assert [k.name for k in run(cloud.list_owned_keypairs("uid-deploy"))] == [NAME]
    assert [k.name for k in run(cloud.list_owned_keypairs("uid-deploy"))] == [NAME]
    assert listing.call_count == 1, "that listing settled the doubt"

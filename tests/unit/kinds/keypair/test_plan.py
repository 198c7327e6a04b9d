"""KeyPair decisions without I/O: the key checked and marked, the Nova name, when Nova's
keypair must be made again, what an import would take over."""

from __future__ import annotations

import pytest

from kumo.api.keypair import KeyPairSpec
from kumo.cloud.model import KeyPair, cluster, keypair_owner
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.kinds.keypair import plan
from tests.unit.fakes.keypairs import ECDSA_KEY, KEY, KEY_FINGERPRINT, OTHER_KEY

RSA_KEY = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC8LpECkOaXw6r9chzcW3wNhIRyQofbjXv8+r/OkCxMmPFRCcm9Cq"
    "+nEK8iPTBn7xbO36hLOEtMoP5VXbRelDGPiFqSLuMnAodmyVlTMTMlDLk1qAhIBTxRXoMLzR5Mlx0WqN/U1jdMEJ22"
    "rnjnWcwkFx7kGpyeESaDuUKb0NZ8Fw=="
)
FIELD = "spec.publicKey"


def spec(**fields: object) -> KeyPairSpec:
    return KeyPairSpec.model_validate({"publicKey": KEY, **fields})


def invalid(text: str) -> str:
    with pytest.raises(TerminalError) as caught:
        plan.parse(text, FIELD)
    assert (caught.value.reason, caught.value.field) == ("InvalidPublicKey", FIELD)
    return caught.value.message


# -- the key -----------------------------------------------------------------------------------


def test_every_accepted_type_parses_and_keeps_its_comment() -> None:
    for text in (KEY, RSA_KEY, ECDSA_KEY):
        key = plan.parse(f"  {text}  you@laptop  \n", FIELD)
        assert (key.type, key.data) == tuple(text.split())
        assert key.comment == ("you@laptop",)
    assert plan.parse(KEY, FIELD).comment == ()


def test_the_fingerprint_is_novas() -> None:
    """Nova's (and `ssh-keygen -l -E md5`'s) fingerprint of the lab's probe key."""
    assert plan.parse(KEY, FIELD).fingerprint == KEY_FINGERPRINT
    assert plan.fingerprint_of(f"{KEY} any comment") == KEY_FINGERPRINT
    assert plan.fingerprint_of("garbage") == "?"


def test_a_bad_key_is_invalid_naming_the_field_and_the_problem() -> None:
    assert "expected an OpenSSH public key" in invalid("-----BEGIN PUBLIC KEY-----")
    assert "ssh-dss" in invalid("ssh-dss AAAAB3NzaC1kc3M=")  # not a type Kumo takes
    assert "is empty" in invalid("  \n ")
    assert "2 lines" in invalid(f"{KEY}\n{OTHER_KEY}\n")
    assert "not valid base64" in invalid("ssh-ed25519 AAAA!notbase64")
    data = RSA_KEY.split()[1]
    assert "says it is 'ssh-rsa', not 'ssh-ed25519'" in invalid(f"ssh-ed25519 {data}")
    assert "is not a key" in invalid("ssh-ed25519 AAAA")
    assert "expected" in invalid(f'command="ls" {KEY}')  # authorized_keys options: no


def test_kumos_own_words_are_never_taken_from_the_users_comment() -> None:
    key = plan.parse(f"{KEY} me kumo-owner=someone-else kumo-orphan=x", FIELD)
    assert key.comment == ("me",)
    assert plan.marked(key, "uid-1") == f"{KEY} me kumo-owner=uid-1@{cluster()}"
    assert keypair_owner(plan.marked(key, "uid-1")) == "uid-1"


def test_the_marker_ends_the_comment_and_release_swaps_it_for_the_orphan_mark() -> None:
    marked = plan.marked(plan.parse(f"{KEY} me@host", FIELD), "uid-1")
    assert marked == f"{KEY} me@host kumo-owner=uid-1@{cluster()}"
    released = plan.released(marked, "uid-1")
    assert released == f"{KEY} me@host kumo-orphan=uid-1"
    assert keypair_owner(released) is None
    assert plan.released(released, "uid-1") == released, "releasing twice changes nothing"
    assert keypair_owner(KEY) is None, "the key data is never taken for a marker"
    assert keypair_owner("kumo-owner=x AAAA") is None


# -- the name ----------------------------------------------------------------------------------


def test_the_nova_name_is_spec_name_else_namespace_dash_name_without_dots() -> None:
    assert plan.nova_name(spec(name="deploy key"), "team-a", "deploy") == "deploy key"
    assert plan.nova_name(spec(), "team-a", "deploy") == "team-a-deploy"
    assert plan.nova_name(spec(), "team-a", "web.v2") == "team-a-web_v2"


def test_the_schema_takes_the_names_nova_takes() -> None:
    for ok in ("deploy", "Deploy_key-2", "a b", "x"):
        spec(name=ok)
    for bad in ("a.b", "a@b", " lead", "trail ", "kumo-owner=x", ""):
        with pytest.raises(ValueError):
            spec(name=bad)


# -- what Nova holds ------------------------------------------------------------------------------


def keypair(public_key: str, name: str = "team-a-deploy") -> KeyPair:
    return KeyPair(name, public_key)


def test_the_same_key_name_and_comment_needs_nothing_whitespace_aside() -> None:
    want = f"{KEY} me kumo-owner=u"
    assert plan.replacement(keypair(want), "team-a-deploy", want) is None
    assert plan.replacement(keypair(f"{KEY}  me kumo-owner=u\n"), "team-a-deploy", want) is None


def test_another_key_a_comment_or_a_name_makes_it_again_naming_the_field() -> None:
    want = f"{KEY} me kumo-owner=u"
    other = plan.marked(plan.parse(OTHER_KEY, FIELD), "u")
    why, change = plan.replacement(keypair(other), "team-a-deploy", want) or ("", None)
    assert "a different key" in why
    assert change == Change(FIELD, plan.fingerprint_of(OTHER_KEY), f"{KEY_FINGERPRINT} me")
    theirs = keypair(f"{KEY} you kumo-owner=u")
    why, change = plan.replacement(theirs, "team-a-deploy", want) or ("", None)
    assert "a different comment" in why
    assert change == Change(FIELD, f"{KEY_FINGERPRINT} you", f"{KEY_FINGERPRINT} me")
    why, change = plan.replacement(keypair(want, "old"), "team-a-deploy", want) or ("", None)
    assert change == Change("spec.name", "old", "team-a-deploy")


def test_kumos_words_are_not_a_difference() -> None:
    """An imported keypair that Kumo only observes carries no marker: it is not drift."""
    assert plan.replacement(keypair(f"{KEY} me"), "team-a-deploy", f"{KEY} me kumo-owner=u") is None


def test_import_compares_the_name_and_the_key_not_the_comment() -> None:
    key = plan.parse(f"{KEY} mine", FIELD)
    assert plan.import_mismatches(keypair(f"{KEY} theirs", "deploy"), "deploy", key, FIELD) == []
    found = plan.import_mismatches(keypair(OTHER_KEY, "deploy"), "other", key, FIELD)
    assert found == [
        Change("spec.name", "deploy", "other"),
        Change(FIELD, plan.fingerprint_of(OTHER_KEY), KEY_FINGERPRINT),
    ]


def test_status_names_the_keypair_its_type_and_fingerprint() -> None:
    assert plan.status(KeyPair("n", f"{KEY} c", None)) == {
        "id": "n",
        "keyName": "n",
        "fingerprint": KEY_FINGERPRINT,
        "keyType": "ssh-ed25519",
    }
    assert plan.status(KeyPair("n", KEY, "aa:bb"))["fingerprint"] == "aa:bb", "Nova's, if given"

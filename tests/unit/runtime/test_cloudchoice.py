"""`kumo plan` and `kumo orphans` choose the clouds.yaml and the cloud as the openstack
CLI does: flags, then OS_CLIENT_CONFIG_FILE / OS_CLOUD, then the standard places and
the file's only cloud; never a silent default, and "no cloud X" lists the clouds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kumo.runtime import cloudchoice
from kumo.runtime.cloudchoice import CloudChoiceError

HOME = Path("/home/ada")
SECRET = "hunter2-do-not-show"


def clouds(*names: str) -> str:
    entry = {"auth": {"auth_url": "http://keystone:5000/v3", "password": SECRET}}
    return yaml.safe_dump({"clouds": {name: entry for name in names}})


class Files:
    """A fake file system for the chooser: path → text (absent: no such file)."""

    def __init__(self) -> None:
        self.files: dict[Path, str] = {}
        self.read: list[Path] = []

    def add(self, path: str, text: str) -> Files:
        self.files[Path(path)] = text
        return self

    def __call__(self, path: Path) -> str | None:
        self.read.append(path)
        return self.files.get(path)


def choose(
    files: Files, clouds_yaml: str | None = None, cloud: str | None = None, **env: str
) -> cloudchoice.CloudSource | None:
    return cloudchoice.choose(clouds_yaml, cloud, env, files, HOME)


def refused(
    files: Files, clouds_yaml: str | None = None, cloud: str | None = None, **env: str
) -> str:
    with pytest.raises(CloudChoiceError) as caught:
        choose(files, clouds_yaml, cloud, **env)
    assert SECRET not in str(caught.value)
    return str(caught.value)


def test_the_standard_places_in_the_openstack_clis_order() -> None:
    places = [str(p) for p in cloudchoice.search_path({}, HOME) if p.suffix == ".yaml"]
    assert places == [
        "clouds.yaml",
        "/home/ada/.config/openstack/clouds.yaml",
        "/etc/xdg/openstack/clouds.yaml",
        "/etc/openstack/clouds.yaml",
    ]
    xdg = cloudchoice.search_path({"XDG_CONFIG_HOME": "/x", "XDG_CONFIG_DIRS": "/s:/t"}, HOME)
    assert [str(p) for p in xdg if p.suffix == ".yaml"][1:5] == [
        "/x/openstack/clouds.yaml",
        "/home/ada/.config/openstack/clouds.yaml",
        "/s/openstack/clouds.yaml",
        "/t/openstack/clouds.yaml",
    ]


def test_the_first_standard_file_that_exists_and_its_only_cloud() -> None:
    files = Files().add("/etc/openstack/clouds.yaml", clouds("site"))
    files.add("/home/ada/.config/openstack/clouds.yaml", clouds("mine"))
    source = choose(files)
    assert source is not None
    assert (source.cloud, source.origin) == ("mine", "/home/ada/.config/openstack/clouds.yaml")
    assert source.clouds_yaml == clouds("mine")
    files.add("clouds.yaml", clouds("here"))
    chosen = choose(files)
    assert chosen is not None and (chosen.cloud, chosen.origin) == ("here", "./clouds.yaml")


def test_os_client_config_file_comes_before_the_standard_places() -> None:
    files = Files().add("clouds.yaml", clouds("here")).add("/tmp/c.yaml", clouds("a", "b"))
    source = choose(files, OS_CLIENT_CONFIG_FILE="/tmp/c.yaml", OS_CLOUD="b")
    assert source is not None and (source.cloud, source.origin) == (
        "b",
        "$OS_CLIENT_CONFIG_FILE /tmp/c.yaml",
    )


def test_flags_come_before_the_environment() -> None:
    files = Files().add("/tmp/c.yaml", clouds("a")).add("/tmp/d.yaml", clouds("a", "b"))
    env = {"OS_CLIENT_CONFIG_FILE": "/tmp/c.yaml", "OS_CLOUD": "a"}
    source = choose(files, "/tmp/d.yaml", "b", **env)
    assert source is not None and (source.cloud, source.origin) == (
        "b",
        "--clouds-yaml /tmp/d.yaml",
    )


def test_no_file_and_no_cloud_asked_is_no_default_cloud() -> None:
    files = Files()
    assert choose(files) is None
    assert len(files.read) == len(cloudchoice.search_path({}, HOME)), "every place looked at"


def test_no_silent_default_cloud_among_several() -> None:
    message = refused(Files().add("clouds.yaml", clouds("kumo", "other")))
    assert message == (
        "./clouds.yaml has 2 clouds (kumo, other): choose one with --cloud or $OS_CLOUD"
    )


def test_no_cloud_x_lists_the_clouds_found() -> None:
    files = Files().add("clouds.yaml", clouds("a", "b"))
    assert refused(files, OS_CLOUD="kumo") == (
        "./clouds.yaml has no cloud 'kumo' ($OS_CLOUD); clouds: a, b"
    )
    assert "no cloud 'x' (--cloud)" in refused(files, cloud="x", OS_CLOUD="a")


def test_a_named_file_that_is_missing_is_an_error_not_a_fall_through() -> None:
    files = Files().add("clouds.yaml", clouds("here"))
    assert refused(files, "/nope.yaml") == "--clouds-yaml /nope.yaml: no such file"
    assert refused(files, OS_CLIENT_CONFIG_FILE="/gone.yaml") == (
        "$OS_CLIENT_CONFIG_FILE /gone.yaml: no such file"
    )


def test_a_cloud_asked_for_without_any_file_says_where_it_looked() -> None:
    message = refused(Files(), OS_CLOUD="kumo")
    assert message.startswith("cloud 'kumo' ($OS_CLOUD) but no clouds.yaml")
    assert "./clouds.yaml" in message and "/etc/openstack/clouds.yaml" in message


def test_unreadable_or_broken_files_are_named_without_their_content() -> None:
    def unreadable(path: Path) -> str | None:
        raise PermissionError(13, "Permission denied")

    message = refused(unreadable)  # type: ignore[arg-type]
    assert message == "./clouds.yaml: Permission denied"
    broken = Files().add("clouds.yaml", f"clouds: {{a: {{password: {SECRET}\n  - [")
    assert refused(broken) == "./clouds.yaml is not valid YAML"
    assert refused(Files().add("clouds.yaml", "- a\n")) == "./clouds.yaml has no 'clouds' mapping"


def test_a_secret_names_its_cloud_or_has_only_one() -> None:
    data = {"clouds.yaml": clouds("a", "b"), "cloud": "b"}
    assert cloudchoice.from_secret(data, "ns/s", None).cloud == "b"
    assert cloudchoice.from_secret(data, "ns/s", "a").cloud == "a", "--cloud first"
    only = cloudchoice.from_secret({"clouds.yaml": clouds("x")}, "ns/s", None)
    assert (only.cloud, only.origin) == ("x", "Secret ns/s")
    with pytest.raises(
        CloudChoiceError, match=r"^Secret ns/s has no cloud 'c' \(--cloud\); clouds: a, b$"
    ):
        cloudchoice.from_secret(data, "ns/s", "c")
    with pytest.raises(CloudChoiceError, match=r"^Secret ns/s does not exist$"):
        cloudchoice.from_secret(None, "ns/s", None)
    with pytest.raises(CloudChoiceError, match=r"^Secret ns/s has no key clouds\.yaml$"):
        cloudchoice.from_secret({}, "ns/s", None)


def test_read_text_reads_real_files(tmp_path: Path) -> None:
    (tmp_path / "clouds.yaml").write_text(clouds("real"))
    assert cloudchoice.read_text(tmp_path / "clouds.yaml") == clouds("real")
    assert cloudchoice.read_text(tmp_path / "absent.yaml") is None

"""Which clouds.yaml and which cloud `kumo plan` and `kumo orphans` use: the openstack
CLI's choice, decided from plain values (no I/O here but the ``read`` the caller gives).

The file: ``--clouds-yaml``, else ``$OS_CLIENT_CONFIG_FILE``, else the first of
``./clouds.yaml``, ``~/.config/openstack/clouds.yaml`` and ``/etc/openstack/clouds.yaml``
that exists (with the XDG directories and the ``.yml``/``.json`` spellings
openstacksdk also reads, in its order). The cloud: ``--cloud``, else
``$OS_CLOUD``, else the file's only cloud. Unlike the openstack CLI, a file that was
named and cannot be read is an error, not a silent fall-through to the next one: a
command that lists or plans against a cloud must not quietly use other credentials.

A Secret (``--credentials-secret``, read by the caller) is chosen before any file: its
cloud is ``--cloud``, else the Secret's key ``cloud``, else its clouds.yaml's only
cloud (``$OS_CLOUD`` names a cloud of the user's own files, not of the Secret).

Messages name files and clouds, never a value from inside a cloud's entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from kumo.cloud.credentials import CloudSource

#: The spellings openstacksdk looks for in each directory of its search path.
NAMES = ("clouds.yaml", "clouds.yml", "clouds.json")

#: Reads a file's text; None when it does not exist. Raises OSError when unreadable.
Reader = Callable[[Path], str | None]


class CloudChoiceError(ValueError):
    """No usable cloud could be chosen; the message says what to give."""


@dataclass(frozen=True)
class Found:
    """A clouds.yaml found, and why this one (for messages)."""

    path: Path
    text: str
    how: str


def search_path(env: Mapping[str, str], home: Path) -> list[Path]:
    """Where the openstack CLI looks, in its order (openstacksdk's CONFIG_SEARCH_PATH):
    the working directory, the user's config directory (``$XDG_CONFIG_HOME``, then
    ``~/.config``), the site's (``$XDG_CONFIG_DIRS``, then ``/etc``)."""
    dirs = [Path(".")]
    if env.get("XDG_CONFIG_HOME"):
        dirs.append(Path(env["XDG_CONFIG_HOME"]) / "openstack")
    dirs.append(home / ".config" / "openstack")
    site = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    dirs += [Path(d) / "openstack" for d in site.split(":") if d]
    dirs.append(Path("/etc/openstack"))
    unique = list(dict.fromkeys(dirs))
    return [directory / name for directory in unique for name in NAMES]


def shown(path: Path) -> str:
    """A path as messages show it: ``./clouds.yaml`` for the working directory's."""
    return str(path) if path.is_absolute() else f"./{path}"


def find_file(
    clouds_yaml: str | None, env: Mapping[str, str], read: Reader, home: Path
) -> Found | None:
    """The clouds.yaml to use (None: none anywhere)."""
    named = [
        (clouds_yaml, "--clouds-yaml"),
        (env.get("OS_CLIENT_CONFIG_FILE"), "$OS_CLIENT_CONFIG_FILE"),
    ]
    for value, how in named:
        if not value:
            continue
        path = Path(value)
        try:
            text = read(path)
        except OSError as error:
            raise CloudChoiceError(f"{how} {path}: {error.strerror or error}") from None
        if text is None:
            raise CloudChoiceError(f"{how} {path}: no such file")
        return Found(path, text, f"{how} {path}")
    for path in search_path(env, home):
        try:
            text = read(path)
        except OSError as error:
            raise CloudChoiceError(f"{shown(path)}: {error.strerror or error}") from None
        if text is not None:
            return Found(path, text, shown(path))
    return None


def cloud_names(text: str, where: str) -> list[str]:
    """The clouds a clouds.yaml defines (parser errors are not quoted: they show the
    offending line, which may hold a password)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise CloudChoiceError(f"{where} is not valid YAML") from None
    clouds = doc.get("clouds") if isinstance(doc, dict) else None
    if not isinstance(clouds, dict):
        raise CloudChoiceError(f"{where} has no 'clouds' mapping")
    return [str(name) for name in clouds]


def pick_cloud(names: list[str], wanted: str | None, how: str, where: str) -> str:
    """``wanted`` if the file has it, else the file's only cloud."""
    found = ", ".join(names) if names else "none"
    if wanted:
        if wanted not in names:
            raise CloudChoiceError(f"{where} has no cloud {wanted!r} ({how}); clouds: {found}")
        return wanted
    if len(names) == 1:
        return names[0]
    raise CloudChoiceError(
        f"{where} has {len(names)} clouds ({found}): choose one with --cloud or $OS_CLOUD"
    )


def choose(
    clouds_yaml: str | None,
    cloud: str | None,
    env: Mapping[str, str],
    read: Reader,
    home: Path,
) -> CloudSource | None:
    """The default cloud from the user's files, as the openstack CLI would choose it;
    None when there is no clouds.yaml anywhere and no cloud was asked for."""
    found = find_file(clouds_yaml, env, read, home)
    wanted, how = (cloud, "--cloud") if cloud else (env.get("OS_CLOUD") or None, "$OS_CLOUD")
    if found is None:
        if wanted:
            places = ", ".join(shown(p) for p in search_path(env, home) if p.suffix == ".yaml")
            raise CloudChoiceError(
                f"cloud {wanted!r} ({how}) but no clouds.yaml: give --clouds-yaml or "
                f"$OS_CLIENT_CONFIG_FILE, or put one in {places}"
            )
        return None
    name = pick_cloud(cloud_names(found.text, found.how), wanted, how, found.how)
    return CloudSource(found.text, name, found.how)


def from_secret(data: Mapping[str, str] | None, secret: str, cloud: str | None) -> CloudSource:
    """The default cloud of Secret ``secret`` (NAMESPACE/NAME) whose data is ``data``."""
    where = f"Secret {secret}"
    if data is None:
        raise CloudChoiceError(f"{where} does not exist")
    if "clouds.yaml" not in data:
        raise CloudChoiceError(f"{where} has no key clouds.yaml")
    wanted: str | None = cloud or data.get("cloud") or None
    how = "--cloud" if cloud else "the Secret's key cloud"
    name = pick_cloud(cloud_names(data["clouds.yaml"], where), wanted, how, where)
    return CloudSource(data["clouds.yaml"], name, where)


def read_text(path: Path) -> str | None:
    """A :data:`Reader` of the real file system."""
    try:
        return path.expanduser().read_text()
    except FileNotFoundError:
        return None

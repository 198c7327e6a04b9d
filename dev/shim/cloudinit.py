"""The cloud-init subset the boot shim runs (issue 42, deliverable 3), and the scripts it
becomes.

Cluster API v1.14.2's kubeadm bootstrap writes a server's user data from one template
(``bootstrap/kubeadm/pkg/cloudinit``): the header ``## template: jinja`` then
``#cloud-config``, ``write_files`` (each with ``path``, ``content`` and optionally
``encoding``, ``owner``, ``permissions``, ``append``), ``runcmd`` (the kubeadm command,
before and after it the KubeadmConfig's own commands) and, when set, ``bootcmd``; the
jinja header lets the files name the instance's metadata (``{{ ds.meta_data.instance_id
}}``). That is what the shim accepts. Anything else (``users``, ``ntp``, ``disk_setup``,
``fs_setup``, ``mounts``, a jinja statement or filter, an unknown variable, another key
of a file) is refused by name: a node that ignored part of its cloud-config would boot
as something the Machine did not ask for.

``parse`` checks and renders; ``scripts`` turns the result into three shell scripts the
node runs as cloud-init would: ``bootcmd.sh`` at every boot, then at the first boot only
``write-files.sh`` and ``runcmd.sh``. Pure: no I/O, so the unit tests feed user data in
and read scripts out.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

JINJA_HEADER = "## template: jinja"
CLOUD_CONFIG = "#cloud-config"
#: What each supported key of a cloud-config is for (the rest are refused by name).
KEYS = ("write_files", "runcmd", "bootcmd")
FILE_KEYS = ("path", "content", "encoding", "owner", "permissions", "append")
#: cloud-init's names of each encoding of a file's content.
ENCODINGS = {
    "": (),
    "text/plain": (),
    "b64": ("base64",),
    "base64": ("base64",),
    "gz": ("gzip",),
    "gzip": ("gzip",),
    "gz+b64": ("base64", "gzip"),
    "gz+base64": ("base64", "gzip"),
    "gzip+b64": ("base64", "gzip"),
    "gzip+base64": ("base64", "gzip"),
}
_EXPRESSION = re.compile(r"{{(.*?)}}", re.S)
_VARIABLE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*")
_OWNER = re.compile(r"[a-z_][a-z0-9_-]*(?::[a-z_][a-z0-9_-]*)?")
_MODE = re.compile(r"0?[0-7]{3,4}")
#: The here-document delimiter of the files' content (base64 never contains it).
_EOF = "KUMO_SHIM_EOF"


class Refused(ValueError):
    """User data the shim does not run; the message names what."""


@dataclass(frozen=True)
class File:
    path: str
    content: bytes
    owner: str = "root:root"
    permissions: str = "0644"
    append: bool = False


Command = str | tuple[str, ...]


@dataclass(frozen=True)
class CloudConfig:
    files: tuple[File, ...] = ()
    bootcmd: tuple[Command, ...] = ()
    runcmd: tuple[Command, ...] = ()


def variables(
    instance_id: str,
    hostname: str,
    name: str,
    availability_zone: str = "",
    project_id: str = "",
    region: str = "",
) -> dict[str, str]:
    """The instance data a template may name, as cloud-init's OpenStack datasource gives
    it: ``ds.meta_data.*`` (metadata keys, dashes as underscores), ``v1.*`` and the same
    standard keys at the top."""
    standard = {
        "instance_id": instance_id,
        "local_hostname": hostname,
        "availability_zone": availability_zone,
        "cloud_name": "openstack",
        "platform": "openstack",
        "region": region,
    }
    meta = {
        "instance_id": instance_id,
        "uuid": instance_id,
        "local_hostname": hostname,
        "hostname": hostname,
        "name": name,
        "availability_zone": availability_zone,
        "project_id": project_id,
    }
    out = dict(standard)
    out.update({f"v1.{k}": v for k, v in standard.items()})
    out.update({f"ds.meta_data.{k}": v for k, v in meta.items()})
    return out


def render(text: str, values: Mapping[str, str]) -> str:
    """Replace each ``{{ variable }}`` by its value; refuse statements, comments,
    filters, expressions and unknown variables."""
    for opener in ("{%", "{#"):
        if opener in text:
            raise Refused(f"jinja {opener} … is not supported: only {{{{ variable }}}}")

    def one(match: re.Match[str]) -> str:
        plain = _VARIABLE.fullmatch(match.group(1))
        if plain is None:
            raise Refused(f"jinja expression {match.group(0)!r} is not a plain variable")
        name = plain.group(1)
        if name not in values:
            raise Refused(f"jinja variable {name} is not instance data the shim provides")
        return values[name]

    return _EXPRESSION.sub(one, text)


def parse(user_data: bytes, values: Mapping[str, str]) -> CloudConfig:
    """User data as Nova holds it (decoded from base64) → the checked cloud-config."""
    if user_data[:2] == b"\x1f\x8b":
        raise Refused("gzip-compressed user data is not supported")
    try:
        text = user_data.decode()
    except UnicodeDecodeError:
        raise Refused("user data is not UTF-8 text") from None
    first, _, rest = text.partition("\n")
    if first.strip() == JINJA_HEADER:
        text = render(rest, values)
        first, _, rest = text.partition("\n")
    if first.strip() != CLOUD_CONFIG:
        raise Refused(f"user data is not {CLOUD_CONFIG} (it starts {first[:40]!r})")
    try:
        body = yaml.safe_load(rest)
    except yaml.YAMLError as error:
        raise Refused(f"the cloud-config is not YAML: {error}") from None
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise Refused("the cloud-config is not a mapping")
    unknown = sorted(str(k) for k in body if k not in KEYS)
    if unknown:
        raise Refused(
            f"not supported by the boot shim: {', '.join(unknown)} (it runs "
            f"{', '.join(KEYS)}, the part of cloud-init CAPI's kubeadm bootstrap needs)"
        )
    return CloudConfig(
        files=tuple(_file(i, f) for i, f in enumerate(_items(body, "write_files"))),
        bootcmd=tuple(_command("bootcmd", i, c) for i, c in enumerate(_items(body, "bootcmd"))),
        runcmd=tuple(_command("runcmd", i, c) for i, c in enumerate(_items(body, "runcmd"))),
    )


def _items(body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Refused(f"{key} is not a list")
    return value


def _command(key: str, index: int, item: Any) -> Command:
    if isinstance(item, str):
        return item
    if isinstance(item, list) and item and all(isinstance(a, str | int) for a in item):
        return tuple(str(a) for a in item)
    raise Refused(f"{key}[{index}] is neither a command line nor a list of arguments")


def _file(index: int, item: Any) -> File:
    where = f"write_files[{index}]"
    if not isinstance(item, dict):
        raise Refused(f"{where} is not a mapping")
    unknown = sorted(str(k) for k in item if k not in FILE_KEYS)
    if unknown:
        raise Refused(f"{where}: not supported by the boot shim: {', '.join(unknown)}")
    path = item.get("path")
    if not isinstance(path, str) or not path.startswith("/") or "\n" in path:
        raise Refused(f"{where}: path must be an absolute path")
    encoding = str(item.get("encoding") or "").strip().lower()
    if encoding not in ENCODINGS:
        raise Refused(f"{where} ({path}): unknown encoding {encoding!r}")
    content = _decode(item.get("content"), ENCODINGS[encoding], f"{where} ({path})")
    owner = str(item.get("owner") or "root:root")
    if not _OWNER.fullmatch(owner):
        raise Refused(f"{where} ({path}): owner {owner!r} is not user[:group]")
    return File(path, content, owner, _permissions(item.get("permissions"), where), _append(item))


def _decode(content: Any, steps: Sequence[str], where: str) -> bytes:
    if content is None:
        data = b""
    elif isinstance(content, bytes):  # YAML !!binary
        data = content
    elif isinstance(content, str):
        data = content.encode()
    else:
        raise Refused(f"{where}: content is not text")
    for step in steps:
        try:
            data = (
                base64.b64decode(data, validate=False)
                if step == "base64"
                else gzip.decompress(data)
            )
        except (binascii.Error, OSError, EOFError) as error:
            raise Refused(f"{where}: content is not {step}: {error}") from None
    return data


def _permissions(value: Any, where: str) -> str:
    if value is None:
        return "0644"
    if isinstance(value, int) and not isinstance(value, bool):  # YAML 1.1 reads 0640 as octal
        return f"0{value:o}"
    text = str(value).strip()
    if not _MODE.fullmatch(text):
        raise Refused(f"{where}: permissions {text!r} are not octal")
    return text if text.startswith("0") else f"0{text}"


def _append(item: Mapping[str, Any]) -> bool:
    value = item.get("append", False)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return bool(value)


# --- the scripts ---------------------------------------------------------------------------


def scripts(config: CloudConfig) -> dict[str, str]:
    """``bootcmd.sh`` (every boot), ``write-files.sh`` and ``runcmd.sh`` (the first boot),
    to run with ``sh`` inside the node. As cloud-init does, a failing command does not
    stop the next; a file that cannot be written stops the files."""
    return {
        "bootcmd.sh": _commands_script("bootcmd", config.bootcmd),
        "write-files.sh": _files_script(config.files),
        "runcmd.sh": _commands_script("runcmd", config.runcmd),
    }


def _commands_script(key: str, commands: Sequence[Command]) -> str:
    lines = [f"#!/bin/sh\n# {key} of the server's cloud-config (dev/shim/cloudinit.py)"]
    for command in commands:
        lines.append(command if isinstance(command, str) else shlex.join(command))
    return "\n".join(lines) + "\n"


def _files_script(files: Sequence[File]) -> str:
    lines = ["#!/bin/sh", "# write_files of the server's cloud-config (dev/shim/cloudinit.py)"]
    lines += ["set -e", "umask 022"]
    for f in files:
        path = shlex.quote(f.path)
        parent = shlex.quote(f.path.rsplit("/", 1)[0] or "/")
        redirect = ">>" if f.append else ">"
        lines.append(f"mkdir -p {parent}")
        lines.append(f"base64 -d <<'{_EOF}' {redirect}{path}")
        lines.append(base64.encodebytes(f.content).decode().rstrip("\n"))
        lines.append(_EOF)
        lines.append(f"chmod {f.permissions} {path}")
        warning = shlex.quote(f"write_files: cannot chown {f.path} to {f.owner}")
        lines.append(f"chown {shlex.quote(f.owner)} {path} || echo {warning} >&2")
    return "\n".join(lines) + "\n"

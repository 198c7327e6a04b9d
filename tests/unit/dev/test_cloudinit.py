"""dev/shim/cloudinit.py: the user data CAPI v1.14.2's kubeadm bootstrap writes is run,
rendered with the instance's metadata; everything else is refused by name; the scripts
it becomes write the same bytes and run the same commands."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
from pathlib import Path

import cloudinit
import pytest
from cloudinit import File, Refused

VALUES = cloudinit.variables(
    "6f1c2a3e-0000-4000-8000-000000000001", "cp-0", "cp-0", "nova", "p1", "tokyo1"
)
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"


def indent(text: str, spaces: int = 6) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def control_plane(extra: str = "") -> bytes:
    """A control plane's user data laid out as CAPI's init template lays it out."""
    kubeadm = (
        "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
        "imageRepository: registry.kumo.lab\n---\napiVersion: kubeadm.k8s.io/v1beta4\n"
        "kind: InitConfiguration\nnodeRegistration:\n  name: '{{ ds.meta_data.local_hostname }}'\n"
        "  kubeletExtraArgs:\n  - name: provider-id\n"
        "    value: openstack:///{{ ds.meta_data.instance_id }}\n"
    )
    return f"""## template: jinja
#cloud-config

write_files:
-   path: /etc/kubernetes/pki/ca.crt
    owner: root:root
    permissions: '0640'
    content: |
{indent(CA)}
-   path: /etc/kubernetes/pki/ca.key
    encoding: "base64"
    owner: root:root
    permissions: '0600'
    content: |
{indent(base64.b64encode(b"key bytes").decode())}
-   path: /run/kubeadm/kubeadm.yaml
    owner: root:root
    permissions: '0640'
    content: |
{indent(kubeadm)}
-   path: /run/cluster-api/placeholder
    owner: root:root
    permissions: '0640'
    content: "This placeholder file is used to create the /run/cluster-api sub directory"
bootcmd:
  - "echo booting {{{{ v1.local_hostname }}}}"
runcmd:
  - "echo \\"pre kubeadm\\""
  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete'
{extra}""".encode()


def test_a_control_planes_user_data_is_run_with_its_instance_data() -> None:
    config = cloudinit.parse(control_plane(), VALUES)
    paths = [f.path for f in config.files]
    assert paths == [
        "/etc/kubernetes/pki/ca.crt",
        "/etc/kubernetes/pki/ca.key",
        "/run/kubeadm/kubeadm.yaml",
        "/run/cluster-api/placeholder",
    ]
    assert config.files[0] == File(paths[0], (CA + "\n").encode(), "root:root", "0640")
    assert config.files[1].content == b"key bytes"
    kubeadm = config.files[2].content.decode()
    assert "name: 'cp-0'" in kubeadm
    assert "value: openstack:///6f1c2a3e-0000-4000-8000-000000000001" in kubeadm
    assert config.bootcmd == ("echo booting cp-0",)
    assert config.runcmd[0] == 'echo "pre kubeadm"'
    assert config.runcmd[1].startswith("kubeadm init --config /run/kubeadm/kubeadm.yaml")


def test_each_metadata_variable_renders() -> None:
    for name, value in [
        ("ds.meta_data.instance_id", "6f1c2a3e-0000-4000-8000-000000000001"),
        ("v1.local_hostname", "cp-0"),
        ("local_hostname", "cp-0"),
        ("ds.meta_data.availability_zone", "nova"),
        ("v1.region", "tokyo1"),
    ]:
        user_data = f"## template: jinja\n#cloud-config\nruncmd:\n  - 'echo {{{{{name}}}}}'\n"
        assert cloudinit.parse(user_data.encode(), VALUES).runcmd == (f"echo {value}",), name


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("{{ ds.meta_data.secret }}", "jinja variable ds.meta_data.secret"),
        ("{{ local_hostname | upper }}", "is not a plain variable"),
        ("{% if true %}x{% endif %}", "jinja {% … is not supported"),
        ("{# note #}", "jinja {# … is not supported"),
    ],
)
def test_jinja_beyond_plain_variables_is_refused_by_name(template: str, named: str) -> None:
    user_data = f"## template: jinja\n#cloud-config\nruncmd:\n  - 'echo {template}'\n"
    with pytest.raises(Refused, match=named.replace("{", r"\{").replace("|", r"\|")):
        cloudinit.parse(user_data.encode(), VALUES)


def test_without_the_jinja_header_nothing_is_rendered() -> None:
    user_data = b"#cloud-config\nruncmd:\n  - 'echo {{ local_hostname }}'\n"
    assert cloudinit.parse(user_data, VALUES).runcmd == ("echo {{ local_hostname }}",)


def test_write_files_decodes_every_encoding_cloud_init_names() -> None:
    raw = b"\x00binary\xffcontent\n"
    for encoding, steps in cloudinit.ENCODINGS.items():
        data = gzip.compress(raw) if "gzip" in steps else raw
        content = base64.b64encode(data).decode()
        if "base64" not in steps:
            content = "!!binary " + content  # YAML's own encoding of bytes
        user_data = f"#cloud-config\nwrite_files:\n- path: /x\n  encoding: '{encoding}'\n"
        user_data += f"  content: {content}\n"
        assert cloudinit.parse(user_data.encode(), VALUES).files[0].content == raw, encoding


def test_the_bootstraps_other_sections_are_refused_by_name() -> None:
    for section in [
        "users:\n- name: capi\n",
        "ntp:\n  enabled: true\n  servers: [pool.ntp.org]\n",
        "disk_setup:\n  /dev/vdb: {layout: true}\n",
        "fs_setup:\n- label: etcd\n  filesystem: ext4\n  device: /dev/vdb\n",
        "mounts:\n- [LABEL=etcd, /var/lib/etcd]\n",
    ]:
        name = section.split(":", 1)[0]
        with pytest.raises(Refused, match=f"not supported by the boot shim: {name} "):
            cloudinit.parse(control_plane(section), VALUES)


def test_a_files_unknown_key_is_refused_naming_the_file_and_the_key() -> None:
    user_data = b"#cloud-config\nwrite_files:\n- path: /a\n  content: x\n  defer: true\n"
    with pytest.raises(Refused, match=r"write_files\[0\]: not supported by the boot shim: defer"):
        cloudinit.parse(user_data, VALUES)


def test_other_user_data_is_refused_saying_why() -> None:
    for user_data, named in [
        (b"#!/bin/sh\necho hi\n", "user data is not #cloud-config"),
        (gzip.compress(b"#cloud-config\n"), "gzip-compressed"),
        (b"#cloud-config\n- a list\n", "not a mapping"),
        (b"#cloud-config\nwrite_files:\n- path: relative\n", "absolute path"),
        (b"#cloud-config\nwrite_files:\n- {path: /a, encoding: rot13}\n", "unknown encoding"),
        (b"#cloud-config\nruncmd:\n- {a: b}\n", r"runcmd\[0\] is neither"),
        (b"#cloud-config\nwrite_files:\n- {path: /a, owner: 'a b'}\n", "owner"),
    ]:
        with pytest.raises(Refused, match=named):
            cloudinit.parse(user_data, VALUES)


def test_defaults_and_yaml_octal_permissions_are_cloud_inits() -> None:
    user_data = b"#cloud-config\nwrite_files:\n- {path: /a}\n- {path: /b, permissions: 0600, append: true}\n"
    a, b = cloudinit.parse(user_data, VALUES).files
    assert (a.owner, a.permissions, a.append, a.content) == ("root:root", "0644", False, b"")
    assert (b.permissions, b.append) == ("0600", True)


def test_the_files_script_writes_the_same_bytes_and_modes(tmp_path: Path) -> None:
    raw = bytes(range(256))
    config = cloudinit.CloudConfig(
        files=(
            File(str(tmp_path / "deep/dir/blob"), raw, permissions="0600"),
            File(str(tmp_path / "log"), b"one\n"),
            File(str(tmp_path / "log"), b"two\n", append=True),
            File(str(tmp_path / "it's quoted"), b""),
        )
    )
    script = tmp_path / "write-files.sh"
    script.write_text(cloudinit.scripts(config)["write-files.sh"])
    subprocess.run(["sh", str(script)], check=True, capture_output=True)
    assert (tmp_path / "deep/dir/blob").read_bytes() == raw
    assert oct(os.stat(tmp_path / "deep/dir/blob").st_mode & 0o777) == "0o600"
    assert (tmp_path / "log").read_bytes() == b"one\ntwo\n"
    assert (tmp_path / "it's quoted").exists()


def test_commands_run_in_order_and_a_failure_does_not_stop_the_next(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = cloudinit.CloudConfig(
        runcmd=(f"echo one >> {out}", "false", ("sh", "-c", f"echo 'two words' >> {out}"))
    )
    script = cloudinit.scripts(config)["runcmd.sh"]
    assert "sh -c 'echo '\"'\"'two words'\"'\"' >> " in script  # a list is quoted as argv
    subprocess.run(["sh", "-c", script], check=True)
    assert out.read_text() == "one\ntwo words\n"

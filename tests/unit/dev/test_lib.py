"""dev/lib.sh's ``containerd_cri_config``: one containerd configuration for the lab's
node (dev/kube/node.sh) and the boot shim's nodes (dev/shim/node.sh). The lab node's
text is pinned byte for byte: the running lab restarts its node when the text changes
(node.sh's running-config), so a refactor must not change it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.unit.dev.conftest import REPO

#: What dev/kube/node.sh wrote before the function existed, for NODE_DIR=/S/node,
#: RUN_DIR=/run/kumo-lab-node and the pause image localhost/kumo-pause:0123456789ab.
LAB_NODE = """\
version = 2
root = "/S/node/containerd/root"
state = "/run/kumo-lab-node/state"
[grpc]
  address = "/run/kumo-lab-node/containerd.sock"
[ttrpc]
  address = "/run/kumo-lab-node/containerd-ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/kumo-pause:0123456789ab"
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/S/node/cni/net.d"
"""


def config(tmp_path: Path, *args: str) -> str:
    """``containerd_cri_config ARGS`` from a shell that sourced dev/lib.sh (its state
    and cache in ``tmp_path``: sourcing it makes their directories)."""
    env = {"PATH": "/usr/bin:/bin", "KUMO_STATE": str(tmp_path), "KUMO_CACHE": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-c", 'source dev/lib.sh && containerd_cri_config "$@"', "lib", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_the_lab_nodes_configuration_is_byte_for_byte_what_node_sh_wrote(
    tmp_path: Path,
) -> None:
    text = config(
        tmp_path,
        "/S/node/containerd/root",
        "/run/kumo-lab-node/state",
        "/run/kumo-lab-node",
        "localhost/kumo-pause:0123456789ab",
        "/S/node/cni/net.d",
    )
    assert text == LAB_NODE


def test_the_lab_node_calls_it_with_its_own_paths() -> None:
    """The arguments dev/kube/node.sh passes are the values its heredoc had."""
    script = (REPO / "dev/kube/node.sh").read_text()
    call = (
        'containerd_cri_config "$NODE_DIR/containerd/root" "$RUN_DIR/state" "$RUN_DIR" '
        '"$PAUSE_IMAGE" \\\n  "$NODE_DIR/cni/net.d" | write_if_changed '
        '"$NODE_DIR/containerd/config.toml"'
    )
    assert call in script
    assert 'SOCK="$RUN_DIR/containerd.sock"' in script  # the socket the config names


def test_a_shim_node_gets_a_real_nodes_paths_inside_its_namespaces(tmp_path: Path) -> None:
    text = config(
        tmp_path,
        "/var/lib/containerd",
        "/run/containerd",
        "/run/containerd",
        "registry.kumo.lab/pause:3.10.1",
        "/etc/cni/net.d",
    )
    assert 'address = "/run/containerd/containerd.sock"' in text  # kubeadm finds it there
    assert 'sandbox_image = "registry.kumo.lab/pause:3.10.1"' in text
    assert text.count("/var/lib/containerd") == 1
    different = {a for a, b in zip(text.splitlines(), LAB_NODE.splitlines(), strict=True) if a != b}
    assert len(different) == 6  # root, state, two sockets, sandbox image, CNI directory

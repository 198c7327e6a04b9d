"""Session fixtures for Kumo's local OpenStack lab (dev/openstack/lab.sh).

Why: integration tests and the operator talk to a real OpenStack (Zed, fake hypervisors)
on 127.0.0.1. `openstack_lab` makes sure it is up — reusing a running lab, which is
checked with `lab.sh status` (a few seconds) before falling back to `lab.sh up` (~75 s
to restart a bootstrapped lab, ~3.5 min from a wiped one, + apt on a fresh machine) —
and returns the path of the generated clouds.yaml (a str). The connection fixtures are
openstacksdk connections for its entries (region tokyo1):

  admin_conn -> kumo-admin   demo_conn -> kumo-demo
  other_conn -> kumo-other   bench_conn -> kumo-bench

The lead's conftest imports everything: `from tests.integration.openstack_fixtures import *`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

__all__ = [
    "LAB_REGION",
    "admin_conn",
    "bench_conn",
    "demo_conn",
    "lab_connect",
    "openstack_lab",
    "other_conn",
]

REPO = Path(__file__).resolve().parents[2]
LAB_SH = REPO / "dev" / "openstack" / "lab.sh"
LAB_REGION = "tokyo1"


def _state_dir() -> Path:
    return Path(os.environ.get("KUMO_STATE", REPO / ".kumo-dev"))


@pytest.fixture(scope="session")
def openstack_lab() -> str:
    """Bring the lab up (or reuse it) and return the clouds.yaml path (a str)."""
    clouds = _state_dir() / "clouds.yaml"
    status = subprocess.run(["bash", str(LAB_SH), "status"], capture_output=True, text=True)
    if status.returncode != 0 or not clouds.exists():
        up = subprocess.run(["bash", str(LAB_SH), "up"], capture_output=True, text=True)
        if up.returncode != 0:
            pytest.fail(f"dev/openstack/lab.sh up failed:\n{up.stderr[-4000:]}")
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    return str(clouds)


def lab_connect(clouds_yaml: str | Path, cloud: str):
    """An openstacksdk connection for one clouds.yaml entry of the lab."""
    import openstack.config
    import openstack.connection

    # load_envvars=False: OS_CLIENT_CONFIG_FILE (set for the lab) would replace the file given
    config = openstack.config.OpenStackConfig(config_files=[str(clouds_yaml)], load_envvars=False)
    region = config.get_one(cloud=cloud, region_name=LAB_REGION)
    return openstack.connection.Connection(config=region)


def _conn(clouds_yaml: str | Path, cloud: str):
    conn = lab_connect(clouds_yaml, cloud)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture(scope="session")
def admin_conn(openstack_lab):
    yield from _conn(openstack_lab, "kumo-admin")


@pytest.fixture(scope="session")
def demo_conn(openstack_lab):
    yield from _conn(openstack_lab, "kumo-demo")


@pytest.fixture(scope="session")
def other_conn(openstack_lab):
    yield from _conn(openstack_lab, "kumo-other")


@pytest.fixture(scope="session")
def bench_conn(openstack_lab):
    yield from _conn(openstack_lab, "kumo-bench")

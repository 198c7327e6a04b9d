#!/usr/bin/python3
"""cinder.py — Cinder's readiness check and demo-cloud bits (run with Debian's python3).

Why: both need an admin session against Cinder's v3 API; one openstacksdk session is
much cheaper than several `openstack volume …` CLI start-ups. Used by services/cinder.sh.

  cinder.py ready    exit 0 when the scheduler knows at least one pool (the fake backend
                     has reported), 1 otherwise
  cinder.py cloud    volume and snapshot quotas: kumo-demo/kumo-bench 1,000 volumes,
                     1,000 snapshots, 10,000 GiB; kumo-other 20 volumes, 20 snapshots,
                     200 GiB (small on purpose, so quota errors stay reachable)
Connects as the clouds.yaml entry kumo-admin ($OS_CLIENT_CONFIG_FILE); region $LAB_REGION.
"""
import os
import sys

import openstack

MICROVERSION = "3.0"
QUOTAS = {
    "kumo-demo": {"volumes": 1000, "snapshots": 1000, "gigabytes": 10000},
    "kumo-bench": {"volumes": 1000, "snapshots": 1000, "gigabytes": 10000},
    "kumo-other": {"volumes": 20, "snapshots": 20, "gigabytes": 200},
}


def ready(conn):
    resp = conn.block_storage.get("/scheduler-stats/get_pools", microversion=MICROVERSION)
    return resp.status_code == 200 and bool(resp.json().get("pools"))


def cloud(conn):
    for name, quotas in QUOTAS.items():
        project = conn.identity.find_project(name, domain_id="default", ignore_missing=False)
        resp = conn.block_storage.put(f"/os-quota-sets/{project.id}",
                                      json={"quota_set": quotas}, microversion=MICROVERSION)
        if resp.status_code != 200:
            sys.exit(f"quotas of {name}: {resp.status_code} {resp.text}")
        print(f"cinder quotas of {name}: {quotas}")


def main(argv):
    conn = openstack.connect(cloud="kumo-admin", region_name=os.environ.get("LAB_REGION", "tokyo1"))
    if argv == ["ready"]:
        sys.exit(0 if ready(conn) else 1)
    elif argv == ["cloud"]:
        cloud(conn)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/python3
"""manila.py — Manila's readiness check and demo-cloud bits (run with Debian's python3).

Why: both need an admin session against Manila's v2 API; one openstacksdk session is
much cheaper than several `openstack share …` CLI start-ups. Used by services/manila.sh.

  manila.py ready    exit 0 when the scheduler knows at least one pool (the dummy backend
                     has reported), 1 otherwise
  manila.py cloud    the public share type `default` (driver_handles_share_servers=False)
                     and quotas: kumo-demo/kumo-bench 100 shares, 2,000 GiB; kumo-other
                     keeps Manila's defaults (50 shares, 1,000 GiB) like the other services
Connects as the clouds.yaml entry kumo-admin ($OS_CLIENT_CONFIG_FILE); region $LAB_REGION.
"""
import os
import sys

import openstack

MICROVERSION = "2.45"
SHARE_TYPE = "default"
BIG_PROJECTS = ("kumo-demo", "kumo-bench")
QUOTAS = {"shares": 100, "gigabytes": 2000, "snapshots": 100, "snapshot_gigabytes": 2000}


def _manila(conn):
    return conn.shared_file_system


def ready(conn):
    resp = _manila(conn).get("/scheduler-stats/pools", microversion=MICROVERSION)
    return resp.status_code == 200 and bool(resp.json().get("pools"))


def cloud(conn):
    manila = _manila(conn)
    types = manila.get("/types?is_public=all", microversion=MICROVERSION).json()["share_types"]
    if not any(t["name"] == SHARE_TYPE for t in types):
        body = {"share_type": {"name": SHARE_TYPE, "share_type_access:is_public": True,
                               "description": "Kumo lab: the dummy backend (NFS, CIFS)",
                               "extra_specs": {"driver_handles_share_servers": False}}}
        resp = manila.post("/types", json=body, microversion=MICROVERSION)
        if resp.status_code != 200:
            sys.exit(f"creating share type {SHARE_TYPE}: {resp.status_code} {resp.text}")
        print(f"created share type {SHARE_TYPE}")
    for name in BIG_PROJECTS:
        project = conn.identity.find_project(name, domain_id="default", ignore_missing=False)
        resp = manila.put(f"/quota-sets/{project.id}", json={"quota_set": QUOTAS},
                          microversion=MICROVERSION)
        if resp.status_code != 200:
            sys.exit(f"quotas of {name}: {resp.status_code} {resp.text}")


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

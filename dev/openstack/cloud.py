#!/usr/bin/python3
"""cloud.py — the lab's demo cloud, idempotently (run by lab.sh with Debian's python3).

Why a Python script: one openstacksdk session is much faster than dozens of `openstack`
CLI calls, and every step is "find, else create", so re-running it is cheap and safe.

--identity: projects kumo-demo, kumo-other, kumo-bench, each with a user of the same name
            (password --password), roles member + reader (+ load-balancer_member).
(default) : identity, then flavors, the `centos79` image, one network per project, the
            external network `public`, a router per project from its network to `public`
            (what a floating IP's association needs), and quotas (kumo-demo/kumo-bench hold 1,000 servers;
            kumo-other keeps Nova's defaults so quota errors stay real).
Connects as the clouds.yaml entry kumo-admin ($OS_CLIENT_CONFIG_FILE).
"""
import argparse
import logging
import os
import tempfile

import openstack

PROJECTS = {  # project -> its private network CIDR (a /20: room for 1,000 ports)
    "kumo-demo": "10.10.0.0/20",
    "kumo-other": "10.20.0.0/20",
    "kumo-bench": "10.30.0.0/20",
}
BIG_PROJECTS = ("kumo-demo", "kumo-bench")
USER_ROLES = ("member", "reader", "load-balancer_member")
FLAVORS = [  # name, vcpus, ram MB, disk GB
    ("n3-1vcpu-2gb", 1, 2048, 10),
    ("m1.tiny", 1, 512, 1),
    ("m1.small", 1, 2048, 20),
    ("m1.medium", 2, 4096, 40),
]
IMAGE = "centos79"

log = logging.getLogger("cloud")


def identity(conn, password):
    ids = {}
    for role in USER_ROLES:
        if not conn.identity.find_role(role):
            conn.identity.create_role(name=role)
    for name in PROJECTS:
        project = conn.identity.find_project(name, domain_id="default")
        if not project:
            project = conn.identity.create_project(name=name, domain_id="default",
                                                   description=f"Kumo lab project {name}")
            log.info("created project %s", name)
        user = conn.identity.find_user(name, domain_id="default")
        if not user:
            user = conn.identity.create_user(name=name, domain_id="default", password=password,
                                             default_project_id=project.id)
            log.info("created user %s", name)
        for role in USER_ROLES:
            conn.grant_role(role, user=user.id, project=project.id)
        ids[name] = project.id
    return ids


def flavors(conn):
    for name, vcpus, ram, disk in FLAVORS:
        if not conn.compute.find_flavor(name, ignore_missing=True):
            conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram, disk=disk, is_public=True)
            log.info("created flavor %s", name)


def image(conn):
    found = sorted(conn.image.images(name=IMAGE), key=lambda i: i.created_at)
    for extra in found[1:]:  # a duplicate from an interrupted or concurrent run
        conn.image.delete_image(extra)
    if found:
        return
    with tempfile.NamedTemporaryFile(suffix=".raw") as f:
        f.write(b"\0" * 1024)
        f.flush()
        conn.create_image(IMAGE, filename=f.name, disk_format="raw", container_format="bare",
                          visibility="public", wait=True)
    log.info("created image %s", IMAGE)


def network(conn, name, project_id, cidr, physnet, **extra):
    net = conn.network.find_network(name, project_id=project_id)
    if not net:
        net = conn.network.create_network(
            name=name, project_id=project_id, provider_network_type="flat",
            provider_physical_network=physnet, **extra)
        log.info("created network %s", name)
    subnet_name = f"{name.removesuffix('-net')}-subnet"
    if not conn.network.find_subnet(subnet_name, network_id=net.id):
        conn.network.create_subnet(name=subnet_name, network_id=net.id, project_id=project_id,
                                   ip_version=4, cidr=cidr)
        log.info("created subnet %s", subnet_name)


def networks(conn, project_ids):
    admin_project = conn.current_project_id
    network(conn, "public", admin_project, "203.0.113.0/24", "public",
            is_router_external=True, is_shared=True)
    for name, cidr in PROJECTS.items():
        network(conn, f"{name}-net", project_ids[name], cidr, name)


def router(conn, project, project_id):
    """`<project>-router`: a gateway on `public` and an interface on the project's subnet.
    Neutron associates a floating IP only with a port whose subnet such a router joins to
    the floating IP's network (no dataplane here: the fake ML2 driver binds nothing real)."""
    name = f"{project}-router"
    found = conn.network.find_router(name, project_id=project_id)
    if not found:
        public = conn.network.find_network("public")
        found = conn.network.create_router(
            name=name, project_id=project_id,
            external_gateway_info={"network_id": public.id})
        log.info("created router %s", name)
    subnet = conn.network.find_subnet(f"{project}-subnet", project_id=project_id)
    joined = {ip["subnet_id"] for port in conn.network.ports(device_id=found.id)
              for ip in port.fixed_ips}
    if subnet and subnet.id not in joined:
        conn.network.add_interface_to_router(found, subnet_id=subnet.id)
        log.info("router %s joins %s", name, subnet.name)
    return found


def routers(conn, project_ids):
    for name in PROJECTS:
        router(conn, name, project_ids[name])


def quotas(conn, project_ids):
    for name in BIG_PROJECTS:
        pid = project_ids[name]
        conn.set_compute_quotas(pid, instances=1000, cores=4000, ram=1000 * 16384,
                                server_groups=1000, server_group_members=1000,
                                key_pairs=1000, metadata_items=256)
        conn.set_network_quotas(pid, port=3000, network=200, subnet=200, router=50,
                                floatingip=200, security_group=200, security_group_rule=2000)
        log.info("quotas raised for %s", name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--password", required=True)
    ap.add_argument("--region", default="tokyo1")
    ap.add_argument("--identity", action="store_true", help="only projects, users and roles")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    conn = openstack.connect(cloud="kumo-admin", region_name=args.region)
    project_ids = identity(conn, args.password)
    if args.identity:
        return
    flavors(conn)
    image(conn)
    networks(conn, project_ids)
    routers(conn, project_ids)
    quotas(conn, project_ids)
    log.info("demo cloud ready (clouds.yaml: %s)", os.environ.get("OS_CLIENT_CONFIG_FILE"))


if __name__ == "__main__":
    main()

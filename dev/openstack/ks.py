#!/usr/bin/python3
"""ks.py — idempotent Keystone registrations for the lab (run with Debian's python3).

Why: the same work through the `openstack` CLI costs one Python start-up (~2-4 s on two
busy cores) per call and a service registration needs ~8 calls; one openstacksdk session
does it in about a second. Used by common.sh's ks_service_user / ks_register_service.

  ks.py service-user NAME            user NAME in project `service`, roles admin + service
  ks.py register NAME TYPE URL       service NAME of TYPE + public/internal/admin endpoints
Connects as the clouds.yaml entry kumo-admin ($OS_CLIENT_CONFIG_FILE); password from
$LAB_PASSWORD, region from $LAB_REGION.
"""
import os
import sys

import openstack


def service_user(conn, name, password):
    project = conn.identity.find_project("service", domain_id="default", ignore_missing=False)
    user = conn.identity.find_user(name, domain_id="default")
    if not user:
        user = conn.identity.create_user(name=name, domain_id="default", password=password,
                                         default_project_id=project.id)
    else:  # keep the password in step with LAB_PASSWORD
        conn.identity.update_user(user, password=password)
    for role in ("admin", "service"):
        conn.grant_role(role, user=user.id, project=project.id)


def register(conn, name, type_, url, region):
    service = conn.identity.find_service(name)
    if not service:
        service = conn.identity.create_service(name=name, type=type_, enabled=True)
    for interface in ("public", "internal", "admin"):
        found = [e for e in conn.identity.endpoints(service_id=service.id, interface=interface)
                 if e.region_id == region]
        if not found:
            conn.identity.create_endpoint(service_id=service.id, interface=interface, url=url,
                                          region_id=region, enabled=True)
        elif found[0].url != url:
            conn.identity.update_endpoint(found[0], url=url)


def main(argv):
    region = os.environ.get("LAB_REGION", "tokyo1")
    conn = openstack.connect(cloud="kumo-admin", region_name=region)
    if argv[:1] == ["service-user"] and len(argv) == 2:
        service_user(conn, argv[1], os.environ["LAB_PASSWORD"])
    elif argv[:1] == ["register"] and len(argv) == 4:
        register(conn, argv[1], argv[2], argv[3], region)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Turn a Cluster API component's release manifests into what the lab applies.

Usage: python dev/capi/manifests.py IN.yaml PORT CA.crt > OUT.yaml

IN.yaml is the component's config/default kustomized (dev/capi/build.sh). The lab runs
the manager as a process on 127.0.0.1 and has no cert-manager, so:
- the manager's Deployment, its webhook Service and cert-manager's Certificate/Issuer
  are left out;
- every webhook (CRD conversion, validating, mutating) is pointed at
  https://127.0.0.1:PORT/<its path> with the lab CA as caBundle, in place of the
  Service reference, and cert-manager's CA-injection annotation is dropped.
Everything else (Namespace, CRDs, ServiceAccount, Roles, bindings) is kept as released.
"""

from __future__ import annotations

import base64
import sys

import yaml

# libyaml when PyYAML has it: the core CRDs alone are over 1 MB of YAML.
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
DROPPED_KINDS = {"Deployment", "Service", "Certificate", "Issuer"}
INJECT = "cert-manager.io/inject-ca-from"


def client_config(service_ref: dict, port: int, ca_bundle: str) -> dict:
    path = service_ref.get("path", "/")
    return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}


def rewrite(doc: dict, port: int, ca_bundle: str) -> dict | None:
    if doc["kind"] in DROPPED_KINDS:
        return None
    doc.get("metadata", {}).get("annotations", {}).pop(INJECT, None)
    if doc["kind"] == "CustomResourceDefinition":
        webhook = (doc["spec"].get("conversion") or {}).get("webhook")
        if webhook:
            webhook["clientConfig"] = client_config(
                webhook["clientConfig"]["service"], port, ca_bundle
            )
    elif doc["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for hook in doc["webhooks"]:
            hook["clientConfig"] = client_config(hook["clientConfig"]["service"], port, ca_bundle)
    return doc


def main() -> None:
    source, port, ca_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(ca_file, "rb") as f:
        ca_bundle = base64.b64encode(f.read()).decode()
    with open(source) as f:
        docs = [d for d in yaml.load_all(f, Loader=Loader) if d]
    kept = [r for d in docs if (r := rewrite(d, port, ca_bundle)) is not None]
    yaml.dump_all(kept, sys.stdout, Dumper=Dumper, sort_keys=False)


if __name__ == "__main__":
    main()

"""The release bundle's pieces (dev/release.sh):

  bundle.py yaml IMAGE < kustomize-output > kumo-<version>.yaml
  bundle.py sbom IMAGE VERSION REVISION DPKG_STATUS PYTHON_JSON > kumo-<version>.cdx.json
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any


def bundle_yaml(text: str, image: str) -> str:
    """The kustomize build with the operator's image set to ``image``."""
    import yaml

    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        if doc["kind"] == "Deployment":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                if container["name"] == "kumo":
                    container["image"] = image
    header = "# Kumo's release bundle (make release): kubectl apply --server-side -f this\n"
    return header + yaml.safe_dump_all(docs, sort_keys=False, width=1000)


def dpkg_packages(status: str) -> list[dict[str, str]]:
    """Installed packages of a dpkg status file: Package, Version, Architecture."""
    found = []
    for stanza in status.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line and not line[0].isspace() and ":" in line:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            found.append(fields)
    return found


def sbom(image: str, version: str, revision: str, status: str, python: str) -> str:
    from cyclonedx.model import ExternalReference, ExternalReferenceType, XsUri
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6
    from packageurl import PackageURL

    bom = Bom()
    repo, _, _ = image.rpartition(":")
    bom.metadata.component = root = Component(
        name="kumo",
        version=version,
        type=ComponentType.CONTAINER,
        bom_ref=f"{repo}:{version}",
        external_references=[
            ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(f"git+commit:{revision}"))
        ],
    )
    for name, ver in json.loads(python):
        # The purl spec names PyPI packages as PEP 503 normalises them.
        purl = PackageURL(type="pypi", name=re.sub(r"[-_.]+", "-", name).lower(), version=ver)
        bom.components.add(
            Component(
                name=name,
                version=ver,
                type=ComponentType.LIBRARY,
                purl=purl,
                bom_ref=str(purl),
            )
        )
    for pkg in dpkg_packages(status):
        purl = PackageURL(
            type="deb",
            namespace="debian",
            name=pkg["Package"],
            version=pkg["Version"],
            qualifiers={"arch": pkg.get("Architecture", ""), "distro": "debian-12"},
        )
        bom.components.add(
            Component(
                name=pkg["Package"],
                version=pkg["Version"],
                type=ComponentType.LIBRARY,
                purl=purl,
                bom_ref=str(purl),
            )
        )
    bom.register_dependency(root, bom.components)  # all installed in the image
    return JsonV1Dot6(bom).output_as_string(indent=2)


def main(argv: list[str]) -> int:
    what: Any = argv[1]
    if what == "yaml":
        sys.stdout.write(bundle_yaml(sys.stdin.read(), argv[2]))
    elif what == "sbom":
        image, version, revision, status, python = argv[2:7]
        with open(status) as s, open(python) as p:
            sys.stdout.write(sbom(image, version, revision, s.read(), p.read()) + "\n")
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

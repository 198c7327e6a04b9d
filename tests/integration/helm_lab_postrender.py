"""Helm post-renderer for the lab (tests/integration/test_helm.py): the chart's
Deployment made to run on the lab's one node as deploy/overlays/lab makes deploy/'s —
the host network (API server and OpenStack listen on 127.0.0.1 only), the in-cluster
client pointed there, the image never pulled, and a free metrics port per Pod with the
probes asking it from inside. Everything else (args, values) stays the chart's.

Reads Helm's rendered manifests on stdin, writes them on stdout."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import yaml

LAB = Path(__file__).resolve().parents[2] / "deploy/overlays/lab/deployment.yaml"


def render(docs: list[dict]) -> list[dict]:
    lab = yaml.safe_load(LAB.read_text())
    lab_spec = lab["spec"]["template"]["spec"]
    lab_container = lab_spec["containers"][0]
    # The overlay's script: pick a free port, then exec kumo; keep its first lines.
    script = lab_container["args"][0].split("exec kumo")[0]
    for doc in docs:
        if doc.get("kind") != "Deployment":
            continue
        spec = doc["spec"]["template"]["spec"]
        spec["hostNetwork"] = lab_spec["hostNetwork"]
        spec["dnsPolicy"] = lab_spec["dnsPolicy"]
        c = spec["containers"][0]
        args = [a for a in c["args"] if not a.startswith(("--metrics-port=", "--metrics-address="))]
        run = " ".join(shlex.quote(a) for a in args)
        c["command"] = lab_container["command"]
        c["args"] = [
            f'{script}exec kumo {run} --metrics-port="$port" --metrics-address=127.0.0.1\n'
        ]
        c["env"] = [*c.get("env", []), *lab_container["env"]]
        c["imagePullPolicy"] = lab_container["imagePullPolicy"]
        c.pop("ports", None)
        for probe in ("livenessProbe", "readinessProbe"):
            c[probe] = {k: v for k, v in lab_container[probe].items() if k != "$patch"}
    return docs


def main() -> None:
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    yaml.safe_dump_all(render(docs), sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()

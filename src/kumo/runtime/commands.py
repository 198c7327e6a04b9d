"""The bodies of `kumo plan` and `kumo orphans`, called by :mod:`kumo.cli`.

Both take the cloud as the openstack CLI does (:mod:`kumo.runtime.cloudchoice`) and the
cluster as kubectl does (``--kubeconfig``, ``$KUBECONFIG``, ``~/.kube/config``). Whatever
goes wrong — no kubeconfig, no cloud, an unreadable manifest, the API server away — is
one line on standard error and exit code 1 (:data:`EXIT_ERROR`), never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import yaml

from kumo.cloud.credentials import CloudRegistry, CloudSource
from kumo.runtime import cloudchoice, cluster, manifests
from kumo.runtime.kube import KubeClient

#: Exit codes of every command (docs/plan.md): like ``terraform plan -detailed-exitcode``
#: and sysexits.h's EX_USAGE.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2
EXIT_USAGE = 64


class CommandError(Exception):
    """What the user must fix, in one line."""


def run(
    name: str,
    command: Callable[[Any], Coroutine[Any, Any, int]],
    args: Any,
    prog: str = "kumo",
) -> int:
    """Run ``command(args)``; any failure is one line naming ``PROG NAME`` and exit 1."""
    if getattr(args, "kubeconfig", None):
        os.environ["KUBECONFIG"] = args.kubeconfig
    try:
        return asyncio.run(command(args))
    except (CommandError, cloudchoice.CloudChoiceError, manifests.ManifestError) as error:
        sys.stderr.write(f"{prog} {name}: {error}\n")
    except Exception as error:  # the API server away, a cloud refusing: still one line
        detail = str(error).splitlines()[0] if str(error) else ""
        sys.stderr.write(f"{prog} {name}: {type(error).__name__}: {detail}\n")
    return EXIT_ERROR


def kubeconfig_problem(env: Mapping[str, str], home: Path) -> str | None:
    """Why no kubeconfig can be read, in one line; None when it can (or in a Pod
    without one, where the ServiceAccount is used)."""
    if env.get("KUBERNETES_SERVICE_HOST") and not env.get("KUBECONFIG"):
        return None
    named = [Path(p) for p in (env.get("KUBECONFIG") or "").split(os.pathsep) if p]
    for path in named or [home / ".kube" / "config"]:
        if not path.is_file() or not os.access(path, os.R_OK):
            how = "" if named else " (no --kubeconfig, no $KUBECONFIG)"
            return f"kubeconfig {path} cannot be read{how}"
    return None


def kube_client() -> KubeClient:
    """The Kubernetes client of a command, or a one-line reason why there is none."""
    problem = kubeconfig_problem(os.environ, Path.home())
    if problem:
        raise CommandError(problem)
    try:
        return KubeClient.from_environment()
    except Exception as error:  # kopf's reader: no current context, not YAML, …
        # A parser's message quotes the offending line, which may hold a token.
        text = str(error).splitlines()[0] if str(error) else ""
        why = type(error).__name__ if isinstance(error, yaml.YAMLError) or not text else text
        raise CommandError(f"the kubeconfig cannot be used: {why}") from None


async def secret_cloud(args: Any, kube: KubeClient) -> CloudSource:
    """The default cloud of the Secret ``--credentials-secret`` names."""
    namespace, _, name = args.credentials_secret.partition("/")
    data = await kube.get_secret_data(namespace, name)
    return cloudchoice.from_secret(data, args.credentials_secret, args.cloud)


def file_cloud(args: Any) -> CloudSource | None:
    """The default cloud of the user's clouds.yaml, as the openstack CLI chooses it."""
    return cloudchoice.choose(
        args.clouds_yaml, args.cloud, os.environ, cloudchoice.read_text, Path.home()
    )


async def plan(args: Any) -> int:
    """`kumo plan`: the default cloud as `kumo run` would have it, each namespace's own."""
    from kumo.runtime import plan

    found = manifests.load(args.filename, args.namespace or "default", sys.stdin)
    if args.filename and not found:
        raise CommandError(f"no Kumo objects in {', '.join(args.filename)}")
    default = None if args.credentials_secret else file_cloud(args)
    kube = kube_client()
    try:
        await cluster.establish(kube, args.cluster_id)
        if args.credentials_secret:
            default = await secret_cloud(args, kube)
        plans = await plan.run_plan(found, args.namespace, default, kube)
    finally:
        await kube.close()
    return plan.write(plans, args.output)


async def orphans(args: Any) -> int:
    """`kumo orphans`: the cloud's marked resources no object of the cluster has."""
    from kumo.engine.sweep import OrphanSweep
    from kumo.runtime import orphans

    source = None if args.credentials_secret else file_cloud(args)
    if source is None and not args.credentials_secret:
        raise CommandError(NO_CLOUD)
    kube = kube_client()
    clouds: CloudRegistry | None = None
    try:
        await cluster.establish(kube, args.cluster_id)  # whose markers are this cluster's
        if source is None:
            source = await secret_cloud(args, kube)
        clouds = CloudRegistry(source, kube.get_secret_data)
        policy = OrphanSweep(delete_data=args.orphan_sweep_data, max_orphans=args.orphan_sweep_max)
        rows = await orphans.find_orphans(await clouds.for_source(source), kube, policy)
    finally:
        if clouds is not None:
            await clouds.close_all()
        await kube.close()
    sys.stdout.write(orphans.render(rows, args.output))
    return EXIT_OK


NO_CLOUD = (
    "no cloud: give --clouds-yaml or $OS_CLIENT_CONFIG_FILE (or put a clouds.yaml where the "
    "openstack CLI looks: ./clouds.yaml, ~/.config/openstack/clouds.yaml, "
    "/etc/openstack/clouds.yaml), or --credentials-secret"
)

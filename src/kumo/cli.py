"""The `kumo` command: print CRDs, RBAC, Argo CD health; run the operator, plan, list orphans.

Only argument parsing lives here; each subcommand calls into the package
(`plan` and `orphans`: :mod:`kumo.runtime.commands`). Exit codes, for every command:
0 done (no changes), 2 changes (`plan`), 1 an error, 64 a usage error (sysexits.h's
EX_USAGE; argparse's own 2 would read as "changes"). Every option's ``--help`` shows
its default.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

import yaml

from kumo import __version__
from kumo.api.common import GROUPS
from kumo.cloud.budget import MAX_QUEUED_BUILDS
from kumo.engine.sweep import DATA_KINDS, MAX_ORPHANS

#: A usage error's exit code (kumo.runtime.commands.EXIT_USAGE; sysexits.h EX_USAGE).
EXIT_USAGE = 64


def shown_default(value: Any) -> str:
    """An option's default as ``--help`` says it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, frozenset | set | list | tuple):
        return ",".join(sorted(map(str, value))) or "none"
    return str(value)


def help_with_default(action: argparse.Action) -> str:
    """An option's help with ``(default: …)`` appended, unless it says its default
    itself (it names where the default comes from: ``$KUBECONFIG``, the manifests')."""
    text = action.help or ""
    if not action.option_strings or action.default is argparse.SUPPRESS or "(default" in text:
        return text
    default = shown_default(action.default).replace("%", "%%")  # help is a %-template
    return f"{text} (default: {default})"


class _HelpFormatter(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        return help_with_default(action)


class _Parser(argparse.ArgumentParser):
    """Every parser of `kumo`: defaults in ``--help``, usage errors exit 64."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _crds(args: argparse.Namespace) -> int:
    from kumo.api.crd import crd_documents

    sys.stdout.write(yaml.safe_dump_all(crd_documents(args.group), sort_keys=False))
    return 0


def _rbac(_: argparse.Namespace) -> int:
    from kumo.kinds.rbac import render

    sys.stdout.write(render())
    return 0


def _argocd_cm(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kumo.api import argocd

    out = Path(args.component)
    script = (out / argocd.SCRIPT).read_text()
    files = argocd.component_files(script)
    if args.stdout:
        sys.stdout.write(files[argocd.PATCH])
        return 0
    for name, text in files.items():
        (out / name).write_text(text)
    return 0


def _kinds(args: argparse.Namespace) -> int:
    from kumo.api.kinds import KINDS

    for info in KINDS:
        print(info.plural if args.plural else info.kind)
    return 0


def _run(args: argparse.Namespace) -> int:
    from kumo.cloud.tenancy import Rules
    from kumo.runtime.operator import OperatorOptions, run_operator
    from kumo.runtime.sweep import SweepOptions

    options = OperatorOptions(
        clouds_yaml=args.clouds_yaml,
        cloud=args.cloud,
        credentials_secret=args.credentials_secret,
        namespace=args.namespace,
        resync_seconds=args.resync_seconds,
        drift_seconds=args.drift_seconds,
        relist_seconds=args.relist_seconds,
        clock_skew_seconds=args.clock_skew_seconds,
        max_queued_builds=args.max_queued_builds,
        workers=args.workers,
        cloud_concurrency=args.cloud_concurrency,
        cloud_rate=args.cloud_rate,
        metrics_port=args.metrics_port,
        metrics_address=args.metrics_address,
        kubeconfig=args.kubeconfig,
        verbose=args.verbose,
        log_format=args.log_format,
        leader_election=args.leader_election,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        lease_seconds=args.lease_seconds,
        shutdown_grace=args.shutdown_grace,
        notifications_secret=args.notifications_secret,
        orphan_sweep=SweepOptions(
            mode=args.orphan_sweep,
            interval=args.sweep_seconds,
            grace=args.orphan_grace,
            delete_data=args.orphan_sweep_data,
            max_orphans=args.orphan_sweep_max,
        ),
        cluster_id=args.cluster_id,
        tenancy_rules=Rules.from_flags(args.allowed_auth_hosts, args.allow_endpoint_overrides),
        import_unmarked_namespaces=args.import_unmarked_namespaces,
    )
    return run_operator(options)


def _plan(args: argparse.Namespace) -> int:
    from kumo.runtime import commands

    return commands.run("plan", commands.plan, args)


def _cluster_id_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster-id",
        default=os.environ.get("KUMO_CLUSTER_ID") or None,
        help="the cluster's identity in Kumo's ownership markers (default: $KUMO_CLUSTER_ID, "
        "else the first 12 hex digits of the kube-system namespace's UID); a rebuilt "
        "cluster gives its old ID here to keep its resources (docs/install.md)",
    )


def _orphans(args: argparse.Namespace) -> int:
    from kumo.runtime import commands

    return commands.run("orphans", commands.orphans, args)


def _cloud_choice(parser: argparse.ArgumentParser) -> None:
    """`plan`'s and `orphans`' cloud, chosen as the openstack CLI chooses it
    (kumo.runtime.cloudchoice); `run` keeps its own flags."""
    parser.add_argument(
        "--clouds-yaml",
        help="clouds.yaml with the default cloud (default: $OS_CLIENT_CONFIG_FILE, else the "
        "first of ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml)",
    )
    parser.add_argument(
        "--cloud",
        help="cloud name inside clouds.yaml (default: $OS_CLOUD, else the file's only cloud)",
    )
    parser.add_argument(
        "--credentials-secret",
        help="NAMESPACE/NAME of a Secret holding clouds.yaml (keys `clouds.yaml`, `cloud`), "
        "used instead of a file, as for `run`",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG)")


def _data_kinds(text: str) -> frozenset[str]:
    """``--orphan-sweep-data volume,share``: data kinds the sweep may delete."""
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - DATA_KINDS)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"not a data kind: {', '.join(unknown)} (one of {', '.join(sorted(DATA_KINDS))})"
        )
    return kinds


def _sweep_policy(parser: argparse.ArgumentParser) -> None:
    """The sweep's policy flags, the same for `run` and `orphans`."""
    parser.add_argument(
        "--orphan-sweep-data",
        type=_data_kinds,
        default=frozenset(),
        metavar="KIND[,KIND]",
        help="data kinds the orphan sweep may delete (of "
        f"{', '.join(sorted(DATA_KINDS))}); by default it deletes none of them: an "
        "orphaned volume, snapshot, share or floating IP is only reported (event "
        'OrphanFound, kumo_orphaned_resources{kept="true"}, `kumo orphans`)',
    )
    parser.add_argument(
        "--orphan-sweep-max",
        type=int,
        default=MAX_ORPHANS,
        help="the sweep deletes nothing in a project where more than this many marked "
        "resources look orphaned at once (nor where half of them or more do)",
    )


def _tenancy_flags(parser: argparse.ArgumentParser) -> None:
    """What a namespace's own clouds.yaml (Secret kumo-cloud-credentials) may ask."""
    parser.add_argument(
        "--allowed-auth-hosts",
        default="",
        help="comma-separated hosts (or host:port) a namespace's auth_url may name "
        "(default: '', any host)",
    )
    parser.add_argument(
        "--allow-endpoint-overrides",
        action="store_true",
        help="let a namespace's clouds.yaml set *_endpoint_override (default: refused, "
        "CredentialsInvalid)",
    )


def _import_unmarked_argument(parser: argparse.ArgumentParser) -> None:
    from kumo.runtime.imports import FLAG, LABEL, parse_namespaces

    parser.add_argument(
        FLAG,
        type=parse_namespaces,
        default=frozenset(),
        metavar="NS[,NS]",
        help="namespaces on the default cloud whose objects may import (spec.import) or "
        "observe (managementPolicy: Observe) resources without Kumo's marker, besides "
        f"those labelled {LABEL}=true; elsewhere on the default cloud that is refused "
        "(ImportNotAllowed): every namespace shares its project (docs/install.md)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kumo", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kumo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    crds = sub.add_parser("crds", help="print the CustomResourceDefinitions (YAML)")
    crds.add_argument(
        "--group",
        choices=GROUPS,
        default=GROUPS[0],
        help="the API group: kumo.dev (Kumo's kinds) or infrastructure.kumo.dev (the "
        "Cluster API provider's)",
    )
    crds.set_defaults(func=_crds)

    rbac = sub.add_parser(
        "rbac", help="print the ServiceAccount and least-privilege RBAC (deploy/base/rbac.yaml)"
    )
    rbac.set_defaults(func=_rbac)

    argocd_cm = sub.add_parser(
        "argocd-cm",
        help="write Argo CD's health customization for every kind (argocd-cm patch and a "
        "kustomize Component) beside the health script",
    )
    argocd_cm.add_argument(
        "--component",
        default="deploy/argocd",
        help="the folder holding health.lua, where argocd-cm.yaml and kustomization.yaml "
        "are written (default: deploy/argocd)",
    )
    argocd_cm.add_argument(
        "--stdout", action="store_true", help="print the argocd-cm patch instead of writing"
    )
    argocd_cm.set_defaults(func=_argocd_cm)

    kinds = sub.add_parser("kinds", help="list Kumo's kinds (for scripts: CRDs, RBAC, tests)")
    kinds.add_argument("--plural", action="store_true", help="print plural resource names")
    kinds.set_defaults(func=_kinds)

    plan = sub.add_parser(
        "plan",
        help="print what the next reconcile of each object would do; change nothing "
        "(exit code 0: no changes, 2: changes, 1: error, 64: usage)",
    )
    plan.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        help="manifest file, folder (a kustomization is built with `kubectl kustomize`) or - "
        "for standard input; repeatable (default: none: the objects in the cluster)",
    )
    plan.add_argument("-n", "--namespace", help="namespace (default: the manifests' or all)")
    plan.add_argument("-o", "--output", choices=["text", "json"], default="text", help="format")
    _cloud_choice(plan)
    _cluster_id_argument(plan)
    plan.set_defaults(func=_plan)

    orphans = sub.add_parser(
        "orphans",
        help="list a cloud's orphaned resources (marked by Kumo, no object has them): "
        "owner, what the orphan sweep does with each, how to import or delete it",
    )
    _cloud_choice(orphans)
    orphans.add_argument("-o", "--output", choices=["text", "json"], default="text", help="format")
    _cluster_id_argument(orphans)
    _sweep_policy(orphans)
    orphans.set_defaults(func=_orphans)

    run = sub.add_parser("run", help="run the operator")
    run.add_argument("--clouds-yaml", help="clouds.yaml file with the default cloud credentials")
    run.add_argument("--cloud", default="kumo", help="cloud name inside clouds.yaml")
    run.add_argument(
        "--credentials-secret",
        help="NAMESPACE/NAME of a Secret holding clouds.yaml (key `clouds.yaml`), "
        "used instead of --clouds-yaml inside a cluster",
    )
    run.add_argument(
        "--notifications-secret",
        help="NAMESPACE/NAME of a Secret whose key `transport_url` is the cloud's message bus "
        "(oslo.messaging's rabbit://… or amqp://…): Nova's notifications then make Kumo "
        "notice out-of-band changes at once instead of at the next listing",
    )
    run.add_argument("--namespace", help="watch only this namespace (default: all)")
    run.add_argument(
        "--orphan-sweep",
        choices=["delete", "report", "off"],
        default="delete",
        help="cloud resources carrying the marker of an object the API server does not have: "
        "report them (metric kumo_orphaned_resources, event OrphanFound) and delete them after "
        "--orphan-grace (delete; data kinds only with --orphan-sweep-data), only report them "
        "(report: for a project another Kumo installation shares), or neither (off). A "
        "namespaced operator only reports",
    )
    _sweep_policy(run)
    run.add_argument(
        "--orphan-grace",
        type=float,
        default=600.0,
        help="seconds a resource must stay orphaned before the sweep deletes it",
    )
    run.add_argument(
        "--sweep-seconds", type=float, default=60.0, help="how often the orphan sweep runs"
    )
    run.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster or $KUBECONFIG)")
    run.add_argument(
        "--resync-seconds", type=float, default=300.0, help="re-reconcile every object this often"
    )
    run.add_argument(
        "--drift-seconds",
        type=float,
        default=10.0,
        help="look for changes in the cloud this often (one incremental listing per "
        "service and project; faster while something is building or pending)",
    )
    run.add_argument(
        "--relist-seconds",
        type=float,
        default=600.0,
        help="full listing of every watched resource type this often (the safety net "
        "for changes the incremental listings cannot show)",
    )
    run.add_argument(
        "--clock-skew-seconds",
        type=float,
        default=10.0,
        help="how far a Nova node's clock may lag the API's: each incremental server "
        "listing asks again for what changed within this margin",
    )
    run.add_argument(
        "--max-queued-builds",
        type=int,
        default=MAX_QUEUED_BUILDS,
        help="servers one cloud may have queued in Nova (accepted, not on a host yet) at "
        "once; other VMs wait their turn (Nova returns every unscheduled build request on "
        "every server listing, so a backlog slows the whole cloud down); 0: no limit",
    )
    run.add_argument("--workers", type=int, default=16, help="objects reconciled concurrently")
    run.add_argument(
        "--cloud-concurrency", type=int, default=16, help="concurrent API calls per cloud"
    )
    run.add_argument(
        "--cloud-rate", type=float, default=20.0, help="API calls per second per cloud"
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        help="port for /metrics, /healthz and /readyz (0: off)",
    )
    run.add_argument("--metrics-address", default="127.0.0.1", help="address that port binds")
    run.add_argument(
        "--leader-election",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="reconcile only while holding the leader Lease (default: on; "
        "turn off only when no other Kumo can run against this cluster)",
    )
    run.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "kumo-system"),
        help="namespace of the leader Lease (default: $POD_NAMESPACE or kumo-system)",
    )
    run.add_argument("--lease-name", default="kumo", help="name of the leader Lease")
    run.add_argument(
        "--lease-seconds",
        type=int,
        default=10,
        help="lease duration: a killed leader is replaced within about this long",
    )
    run.add_argument(
        "--shutdown-grace",
        type=float,
        default=15.0,
        help="on SIGTERM, seconds to let reconciles in flight finish before the lease is released",
    )
    _cluster_id_argument(run)
    _tenancy_flags(run)
    _import_unmarked_argument(run)
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    run.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="json: one object per line with the object, the pass's global request ID "
        "(X-OpenStack-Request-ID) and the cloud's request IDs (docs/operations.md)",
    )
    run.set_defaults(func=_run)
    return parser


KUBECTL_DESCRIPTION = """kubectl kumo: see Kumo's objects as a tree, find what keeps one from
being Ready, list orphans. Reads the cluster with your kubeconfig; reads the cloud only
with --cloud. Exit codes as kumo's: 0 answered, 1 an error, 64 a usage error."""


def _kubectl_command(name: str) -> Any:
    def command(args: argparse.Namespace) -> int:
        from kumo.runtime import kubectl

        body = {
            "tree": kubectl.tree_command,
            "why": kubectl.why_command,
            "orphans": kubectl.orphans_command,
        }[name]
        return kubectl.run(name, body, args)

    return command


def build_kubectl_parser() -> argparse.ArgumentParser:
    """`kubectl kumo` (the console script kubectl-kumo, which kubectl runs as a plugin)."""
    parser = _Parser(prog="kubectl kumo", description=KUBECTL_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"kubectl-kumo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "-n",
            "--namespace",
            help="namespace (default: the kubeconfig context's, else default)",
        )
        p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="format")
        p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG)")

    def cloud(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument("--cloud", nargs="?", const="", default=None, metavar="NAME", help=what)
        p.add_argument(
            "--clouds-yaml",
            help="with --cloud: clouds.yaml with the default cloud (default: "
            "$OS_CLIENT_CONFIG_FILE, else where the openstack CLI looks)",
        )
        p.add_argument(
            "--credentials-secret",
            help="with --cloud: NAMESPACE/NAME of a Secret holding clouds.yaml, as for `kumo run`",
        )
        _cluster_id_argument(p)

    def on_object(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("target", metavar="KIND/NAME", help="e.g. vmg/web, lb/front, vm/db-0")
        common(p)
        p.set_defaults(func=_kubectl_command(name))
        return p

    tree = on_object(
        "tree",
        "an object, what it owns, what it names and what names it, with the cloud "
        "resources their statuses record (IDs, states), Ready and reason per object",
    )
    cloud(
        tree,
        "also list the cloud (the cloud NAME in clouds.yaml, else $OS_CLOUD or its only "
        "one) and mark each ID present or missing",
    )
    on_object(
        "why",
        "follow WaitingFor* reasons and conditions through references to the first "
        "thing that keeps an object from being Ready, and say what to do",
    )

    orphans = sub.add_parser(
        "orphans",
        help="the orphan sweep's findings (OrphanFound events); with --cloud, the cloud's "
        "own listing (as `kumo orphans`)",
    )
    common(orphans)
    orphans.add_argument(
        "-A", "--all-namespaces", action="store_true", help="events of every namespace"
    )
    cloud(orphans, "list the cloud itself (the cloud NAME in clouds.yaml, as `kumo orphans`)")
    _sweep_policy(orphans)
    orphans.set_defaults(func=_kubectl_command("orphans"))
    return parser


def kubectl_main(argv: list[str] | None = None) -> int:
    """`kubectl kumo …`: one command's exit code (usage errors exit 64)."""
    args = build_kubectl_parser().parse_args(argv)
    return int(args.func(args))


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code (usage errors exit 64 from the parser)."""
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())

"""`kumo run`: kopf watches the kinds, the Controller does the rest.

Lifecycle: list every kind into the cache (the startup barrier: no reconcile sees a
half-filled cache), then wait as standby until this process holds the leader Lease,
then reconcile until SIGTERM (finish in-flight work, release the lease) or until the
lease is lost (stop writing at once and wait as standby again).

kopf is used for what it is good at — resilient watch streams, logging, liveness —
through raw event handlers only; Kumo's own finalizers, queue and status writes
keep the reconcile level-triggered and independent of kopf's handler progress.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf

from kumo.api.kinds import KINDS
from kumo.cloud import tenancy
from kumo.cloud.budget import MAX_QUEUED_BUILDS
from kumo.cloud.credentials import CloudRegistry, CloudSource
from kumo.cloud.notifications import (
    Notice,
    NoticeBoard,
    NotificationListener,
    read_transport_url,
)
from kumo.cloud.watch import SKEW_SECONDS
from kumo.kinds import registry
from kumo.runtime import cluster, commands, defaultcloud, logs, metrics
from kumo.runtime.controller import Controller
from kumo.runtime.health import Health, start_server
from kumo.runtime.imports import ImportGate
from kumo.runtime.kube import KubeClient, KubeLeaseAPI
from kumo.runtime.kube import login as kube_login
from kumo.runtime.leader import LeaderElector
from kumo.runtime.sweep import SweepOptions

log = logging.getLogger("kumo")


@dataclass(frozen=True)
class OperatorOptions:
    clouds_yaml: str | None = None
    cloud: str = "kumo"
    credentials_secret: str | None = None
    namespace: str | None = None
    resync_seconds: float = 300.0
    drift_seconds: float = 10.0
    relist_seconds: float = 600.0
    clock_skew_seconds: float = SKEW_SECONDS
    max_queued_builds: int = MAX_QUEUED_BUILDS
    workers: int = 16
    cloud_concurrency: int = 16
    cloud_rate: float = 20.0
    metrics_port: int = 0
    metrics_address: str = "127.0.0.1"
    kubeconfig: str | None = None
    verbose: bool = False
    #: ``text`` or ``json`` (runtime/logs.py).
    log_format: str = "text"
    leader_election: bool = True
    lease_namespace: str = "kumo-system"
    lease_name: str = "kumo"
    lease_seconds: int = 10
    identity: str | None = None
    shutdown_grace: float = 15.0
    notifications_secret: str | None = None
    orphan_sweep: SweepOptions = field(default_factory=SweepOptions)
    #: The cluster ID Kumo's markers name (None: derived from kube-system's UID).
    cluster_id: str | None = None
    #: What a namespace's own clouds.yaml may ask (--allowed-auth-hosts, …).
    tenancy_rules: tenancy.Rules = field(default_factory=tenancy.Rules)
    #: Namespaces on the default cloud whose objects may import or observe resources
    #: without Kumo's marker, besides those labelled so (runtime/imports.py).
    import_unmarked_namespaces: frozenset[str] = frozenset()


class Lifecycle:
    """What one `kumo run` holds between kopf's startup and cleanup, and its health."""

    def __init__(self, options: OperatorOptions) -> None:
        self.options = options
        # This process's name: in the leader Lease and in the User-Agent of its requests
        # to the API server (runtime/kube.py). POD_NAME (the Deployment sets it): the
        # Lease names the Pod that leads, also for host-network Pods, whose hostname is
        # the node's.
        self.identity = (
            options.identity
            or f"{os.environ.get('POD_NAME') or socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        )
        self.kube: KubeClient | None = None
        self.controller: Controller | None = None
        self.elector: LeaderElector | None = None
        self.synced = False
        self.stopping = False
        self.cluster_id = ""
        self._election: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        metrics.LEADER.set_function(lambda: float(self.health().role == "leader"))
        self._following: asyncio.Task[None] | None = None

    async def _read_default(self) -> CloudSource | None:
        """The default cloud as its Secret or file holds it now (runtime/defaultcloud.py)."""
        options, kube = self.options, self.kube
        assert kube is not None
        return await defaultcloud.read(
            options.credentials_secret, options.clouds_yaml, options.cloud, kube.get_secret_data
        )

    def health(self) -> Health:
        elector = self.elector
        if self.stopping:
            role = "stopping"
        elif self.controller is None or not self.synced:
            role = "starting"
        elif elector is None or elector.leading:
            role = "leader"
        else:
            role = "standby"
        identity = elector.identity if elector else ""
        healthy = elector is None or elector.healthy
        return Health(self.synced, role, healthy, identity, cluster=self.cluster_id)

    async def start(self) -> None:
        options = self.options
        self.kube = kube = KubeClient.from_environment(self.identity)
        try:  # before anything reads or writes a marker
            self.cluster_id = await cluster.establish(kube, options.cluster_id)
        except cluster.ClusterIdentityError as error:
            log.error("%s", error)
            raise kopf.PermanentError(str(error)) from None
        default = await self._read_default()
        if default is None and options.credentials_secret:
            # deploy/ ships the Secret empty: run, and say why objects get NoCloudCredentials.
            log.warning(
                "Secret %s has no key clouds.yaml: no default cloud until it has one",
                options.credentials_secret,
            )
        clouds = CloudRegistry(
            default,
            kube.get_secret_data,
            concurrency=options.cloud_concurrency,
            rate=options.cloud_rate,
            watch_seconds=options.drift_seconds,
            relist_seconds=options.relist_seconds,
            skew_seconds=options.clock_skew_seconds,
            max_queued_builds=options.max_queued_builds,
            rules=options.tenancy_rules,
        )
        notices = await self._listen(kube)
        self.controller = controller = Controller(
            registry.actuators(),
            kube,
            clouds,
            workers=options.workers,
            resync_seconds=options.resync_seconds,
            notices=notices,
            sweep=options.orphan_sweep,
            namespace=options.namespace,
            imports=ImportGate(kube.get_namespace, options.import_unmarked_namespaces),
        )
        await controller.prime(options.namespace)  # the startup barrier: all kinds listed
        self.synced = True
        follower = defaultcloud.DefaultCloudFollower(
            self._read_default,
            clouds,
            lambda: controller.enqueue_namespaces(clouds.uses_default),
            given=options.credentials_secret,
        )
        self._following = asyncio.create_task(follower.run())
        log.info("caches synced (default cloud: %s)", default.cloud if default else "none")
        if not options.leader_election:
            controller.start()
            return
        identity = self.identity
        lease = KubeLeaseAPI(kube, options.lease_namespace, options.lease_name)
        self.elector = LeaderElector(lease, identity, lease_seconds=options.lease_seconds)
        log.info(
            "standby until this process (%s) holds lease %s/%s",
            identity,
            lease.namespace,
            lease.name,
        )
        self._elect()

    async def _listen(self, kube: KubeClient) -> NoticeBoard | None:
        """Start listening to the cloud's notifications, if a Secret names the bus. A
        standby listens too (cheap; its watches are not running, so nothing is poked)
        and leads without a gap. A Secret that is missing or wrong is logged and Kumo
        runs on its listings alone: notifications only make it notice sooner."""
        secret = self.options.notifications_secret
        if not secret:
            return None
        namespace, _, name = secret.partition("/")
        try:
            url = read_transport_url(
                await kube.get_secret_data(namespace, name), f"Secret {secret}"
            )
        except Exception as error:
            log.warning("no cloud notifications: %s", error)
            return None
        board = NoticeBoard()
        listener = NotificationListener(url, board, on_notice=_count_notice)
        self._listener = asyncio.create_task(listener.run())
        return board

    def _elect(self) -> None:
        """Stand by until this process holds the lease, then lead (see runtime/leader.py)."""
        assert self.elector is not None
        self._election = asyncio.create_task(self.elector.run(self._lead, self._lost))

    async def _lead(self) -> None:
        assert self.controller is not None
        self.controller.start()

    async def _lost(self) -> None:
        """Another process may lead now: stop writing at once and go back to standby
        (an API server outage longer than the renew deadline ends here too; the caches
        stay, so leading again costs no restart)."""
        if self.controller is not None:
            await self.controller.stop(grace=0)
        if not self.stopping:
            self._elect()

    async def cleanup(self) -> None:
        """SIGTERM: finish in-flight reconciles while still renewing, then release the lease."""
        self.stopping = True
        if self.controller is not None:
            await self.controller.stop(grace=self.options.shutdown_grace)
        for task in (self._listener, self._following):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self._election is not None:
            self._election.cancel()
            await asyncio.gather(self._election, return_exceptions=True)
        if self.elector is not None:
            await self.elector.release()
        if self.kube is not None:
            await self.kube.close()


def _count_notice(notice: Notice) -> None:
    metrics.NOTIFICATIONS.labels(notice.service, notice.event_type).inc()


def build_registry(lifecycle: Lifecycle) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)  # again on each 401 and expiry: fresh credentials
    async def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo | None:
        return await kube_login(settings, lifecycle.identity)

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.watching.server_timeout = 270
        settings.watching.client_timeout = 300
        await lifecycle.start()

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        await lifecycle.cleanup()

    for info in KINDS:
        _watch(registry, lifecycle, info.kind, info.group, info.version, info.plural)

    return registry


def _watch(
    registry: kopf.OperatorRegistry, lifecycle: Lifecycle, kind: str, *resource: str
) -> None:
    # Event handlers are coroutines: kopf runs a plain function in a worker thread, and
    # the store and the work queue (an asyncio.Event inside) belong to the event loop —
    # from threads, a listing raced a write ("dictionary changed size during iteration",
    # the event lost) and a wake-up could be missed.
    @kopf.on.event(*resource, registry=registry, id=f"watch-{kind}")
    async def on_event(event: kopf.RawEvent, **_: Any) -> None:
        controller = lifecycle.controller
        if controller is not None:
            controller.observe(kind, event.get("type"), event["object"])


def run_operator(options: OperatorOptions) -> int:
    logs.configure(options.log_format, options.verbose)
    if options.kubeconfig:
        os.environ["KUBECONFIG"] = options.kubeconfig
    problem = startup_problem(options)
    if problem:  # kopf would retry its startup for ever: say it once and exit 1
        sys.stderr.write(f"kumo run: {problem}\n")
        return commands.EXIT_ERROR
    return asyncio.run(_serve(options))


def startup_problem(options: OperatorOptions) -> str | None:
    """What keeps ``kumo run`` from starting at all (no kubeconfig, no clouds.yaml)."""
    if options.clouds_yaml and not os.access(options.clouds_yaml, os.R_OK):
        return f"--clouds-yaml {options.clouds_yaml} cannot be read"
    return commands.kubeconfig_problem(os.environ, Path.home())


async def _serve(options: OperatorOptions) -> int:
    lifecycle = Lifecycle(options)
    runner = None
    if options.metrics_port:
        runner = await start_server(options.metrics_address, options.metrics_port, lifecycle.health)
    namespaces = [options.namespace] if options.namespace else []
    try:
        await kopf.operator(
            registry=build_registry(lifecycle),
            standalone=True,  # no kopf peering: leader election is Kumo's own (runtime/leader.py)
            clusterwide=not namespaces,
            namespaces=namespaces,
        )
    finally:
        if runner is not None:
            await runner.cleanup()
    return 0

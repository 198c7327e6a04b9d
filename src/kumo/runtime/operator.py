"""`kumo run`: kopf watches the four kinds (and ConfigMaps), the Controller does the rest.

kopf is used for what it is good at — resilient watch streams, logging, liveness —
through raw event handlers only; Kumo's own finalizers, queue and status writes
keep the reconcile level-triggered and independent of kopf's handler progress.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kopf
from prometheus_client import start_http_server

from kumo.api.common import GROUP, VERSION
from kumo.api.kinds import KINDS
from kumo.cloud.credentials import CloudRegistry, CloudSource
from kumo.kinds.dnsrecord.actuator import DNSRecordActuator
from kumo.kinds.loadbalancer.actuator import LoadBalancerActuator
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from kumo.runtime.controller import Controller
from kumo.runtime.kube import KubeClient

log = logging.getLogger("kumo")


@dataclass(frozen=True)
class OperatorOptions:
    clouds_yaml: str | None = None
    cloud: str = "kumo"
    credentials_secret: str | None = None
    namespace: str | None = None
    resync_seconds: float = 300.0
    drift_seconds: float = 10.0
    workers: int = 8
    cloud_concurrency: int = 8
    cloud_rate: float = 20.0
    metrics_port: int = 0
    metrics_address: str = "127.0.0.1"
    kubeconfig: str | None = None
    verbose: bool = False


def build_registry(options: OperatorOptions) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    state: dict[str, Any] = {}

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.watching.server_timeout = 270
        settings.watching.client_timeout = 300
        kube = KubeClient.from_environment()
        default = await _default_source(options, kube)
        clouds = CloudRegistry(
            default,
            kube.get_secret_data,
            concurrency=options.cloud_concurrency,
            rate=options.cloud_rate,
        )
        controller = Controller(
            [
                VirtualMachineActuator(),
                VirtualMachineGroupActuator(),
                LoadBalancerActuator(),
                DNSRecordActuator(),
            ],
            kube,
            clouds,
            workers=options.workers,
            resync_seconds=options.resync_seconds,
            drift_seconds=options.drift_seconds,
        )
        controller.start()
        state.update(kube=kube, controller=controller)
        log.info("kumo started (default cloud: %s)", default.cloud if default else "none")

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        if "controller" in state:
            await state["controller"].stop()
            await state["kube"].close()

    for info in KINDS:
        _watch(registry, state, info.kind, GROUP, VERSION, info.plural)

    @kopf.on.event("", "v1", "configmaps", registry=registry)
    def config_map_changed(event: kopf.RawEvent, **_: Any) -> None:
        controller = state.get("controller")
        meta = event["object"]["metadata"]
        if controller is not None:
            controller.enqueue_script_users(
                "ConfigMap", meta.get("namespace", "default"), meta["name"]
            )

    return registry


def _watch(
    registry: kopf.OperatorRegistry, state: dict[str, Any], kind: str, *resource: str
) -> None:
    @kopf.on.event(*resource, registry=registry, id=f"watch-{kind}")
    def on_event(event: kopf.RawEvent, **_: Any) -> None:
        controller = state.get("controller")
        if controller is not None:
            controller.observe(kind, event.get("type"), event["object"])


async def _default_source(options: OperatorOptions, kube: KubeClient) -> CloudSource | None:
    if options.credentials_secret:
        namespace, _, name = options.credentials_secret.partition("/")
        data = await kube.get_secret_data(namespace, name)
        if not data or "clouds.yaml" not in data:
            raise RuntimeError(f"Secret {options.credentials_secret} has no key clouds.yaml")
        return CloudSource(
            data["clouds.yaml"],
            data.get("cloud", options.cloud),
            f"default Secret {options.credentials_secret}",
        )
    if options.clouds_yaml:
        return CloudSource(
            Path(options.clouds_yaml).read_text(),
            options.cloud,
            f"--clouds-yaml {options.clouds_yaml}",
        )
    return None


def run_operator(options: OperatorOptions) -> int:
    logging.basicConfig(
        level=logging.DEBUG if options.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    for noisy in ("openstack", "keystoneauth", "urllib3", "stevedore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if options.kubeconfig:
        os.environ["KUBECONFIG"] = options.kubeconfig
    if options.metrics_port:
        start_http_server(options.metrics_port, addr=options.metrics_address)
    registry = build_registry(options)
    namespaces = [options.namespace] if options.namespace else []
    asyncio.run(
        kopf.operator(
            registry=registry,
            standalone=True,
            clusterwide=not namespaces,
            namespaces=namespaces,
        )
    )
    return 0

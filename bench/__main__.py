"""Kumo's benchmarks (not part of `make test`; see bench/README.md, docs/performance.md).

python -m bench memory [--vms 1000]      drift detection on an in-memory cloud
python -m bench group [--sizes 20,100]   Kumo's CPU per VM by group size, in memory
python -m bench stack [--n 20,100]       Kumo vs. direct openstacksdk vs. Heat on the lab
python -m bench fleet [--n 300 --groups 3 --contenders kumo,direct]   a big fleet; Kumo once converged
python -m bench idle-neutron [--groups 10,100]  idle Neutron requests/min by security groups
python -m bench idle-cinder [--volumes 10,1000]  idle Cinder requests/min by volumes
python -m bench stateful [--n 50 --repeat 3]   a stateful group (volumes) vs. direct openstacksdk
python -m bench octavia-cost [--sizes 20,50,100]  what a member change costs the lab's Octavia
python -m bench metrics-hook [--requests 200000]  CPU per cloud request of the metrics hook
python -m bench fip-follow [--deletes 8]  a FloatingIP following its VM through server deletes
"""

from __future__ import annotations

import argparse
import signal
from types import FrameType

from bench import group, memory, metrics_cost


def stop_as_interrupted(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops a run as Ctrl-C does: its cloud resources are swept and `make up`'s
    operator is started again."""
    raise KeyboardInterrupt(f"signal {signum}")


def stoppable() -> None:
    """A run started in the background by a non-interactive shell inherits SIGINT
    ignored, and SIGTERM would end it without its sweep: make both interrupt it."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop_as_interrupted)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    memory.add_arguments(sub.add_parser("memory", help="in-memory drift benchmark"))
    group.add_arguments(sub.add_parser("group", help="in-memory CPU per VM by group size"))
    metrics_cost.add_arguments(
        sub.add_parser("metrics-hook", help="in-memory CPU per cloud request of the metrics")
    )
    from bench import stack  # needs only the venv; the lab is touched when it runs

    stack.add_arguments(sub.add_parser("stack", help="real-stack: kumo, direct, heat"), False)
    stack.add_arguments(
        sub.add_parser("fleet", help="real-stack: a big fleet (Kumo, and the direct script)"), True
    )
    from bench import fip_follow, idle, idle_cinder, octavia_cost, stateful

    stateful.add_arguments(
        sub.add_parser("stateful", help="real-stack: a stateful group vs. the direct script")
    )

    idle.add_arguments(sub.add_parser("idle-neutron", help="lab: idle Neutron req/min by groups"))
    idle_cinder.add_arguments(
        sub.add_parser("idle-cinder", help="lab: idle Cinder req/min by volumes")
    )
    octavia_cost.add_arguments(
        sub.add_parser("octavia-cost", help="lab: Octavia's CPU per member change by pool size")
    )
    fip_follow.add_arguments(
        sub.add_parser("fip-follow", help="lab: a FloatingIP following its VM, vs. none")
    )
    args = parser.parse_args()
    stoppable()
    if args.command == "memory":
        memory.run(args)
    elif args.command == "group":
        group.run(args)
    elif args.command == "metrics-hook":
        metrics_cost.run(args)
    elif args.command == "idle-neutron":
        idle.run(args)
    elif args.command == "idle-cinder":
        idle_cinder.run(args)
    elif args.command == "stateful":
        stateful.run(args)
    elif args.command == "octavia-cost":
        octavia_cost.run(args)
    elif args.command == "fip-follow":
        fip_follow.run(args)
    else:
        stack.run(args, fleet=args.command == "fleet")


if __name__ == "__main__":
    main()

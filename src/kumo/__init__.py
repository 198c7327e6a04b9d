"""Kumo: OpenStack infrastructure as Kubernetes custom resources, kept true continuously."""

__version__ = "0.1.0"

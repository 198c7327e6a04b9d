"""The cloud adapter: the only package that imports openstacksdk.

Kinds call :class:`kumo.cloud.adapter.OpenStackCloud` (or an in-memory fake with the
same methods in unit tests) and get plain dataclasses from :mod:`kumo.cloud.model`.
"""

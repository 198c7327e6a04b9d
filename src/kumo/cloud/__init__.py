"""The cloud adapter: the only package that imports openstacksdk.

Kinds call the cloud through :mod:`kumo.ports` (``Context.cloud``):
:class:`kumo.cloud.adapter.OpenStackCloud` composes every service's calls
(``kumo.cloud.services.<service>``), and unit tests give the kinds fakes inheriting the
ports. The values are plain dataclasses from :mod:`kumo.ports.model`.
"""

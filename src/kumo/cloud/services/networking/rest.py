"""NeutronBase: how every part of the networking service (security groups, floating IPs,
networks) calls Neutron's REST API: one request, or every page of a listing
(``pagination_max_limit``: cloud/pages.py)."""

from __future__ import annotations

from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import pages
from kumo.cloud.base import CloudBase


class NeutronBase(CloudBase):
    def _neutron(self, method: str, path: str, **kw: Any) -> Any:
        """One Neutron request; errors raised as the SDK's HttpExceptions (so ``_call``
        classifies them like every other service's); the JSON body or None."""
        response = getattr(self.conn.network, method)(path, **kw)
        os_exc.raise_from_response(response)
        return response.json() if response.content else None

    def _neutron_list(self, path: str, key: str, params: dict[str, Any]) -> list[Any]:
        """Every page of a Neutron listing (``pagination_max_limit``: cloud/pages.py)."""

        def get(page_path: str, query: dict[str, Any]) -> Any:
            return self._neutron("get", page_path, params=query)

        return pages.linked(get, path, key, params)

    def _neutron_project(
        self, path: str, key: str, params: dict[str, Any] | None = None
    ) -> list[Any]:
        """Every page of a Neutron listing of this project's own resources (in a cloud
        thread: the project is the token's, which may need authenticating first)."""
        scoped = {**(params or {}), "project_id": self.conn.current_project_id}
        return self._neutron_list(path, key, scoped)

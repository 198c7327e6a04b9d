"""NeutronBase: how every part of the networking service (security groups, floating IPs,
networks) calls Neutron's REST API: one request, or every page of a listing
(``pagination_max_limit``: cloud/pages.py)."""

from __future__ import annotations

from typing import Any

from kumo.cloud.base import CloudBase


class NeutronBase(CloudBase):
    def _neutron(self, method: str, path: str, **kw: Any) -> Any:
        """One Neutron request (:meth:`CloudBase._rest`)."""
        return self._rest(self.conn.network, method, path, **kw)

    def _neutron_list(self, path: str, key: str, params: dict[str, Any]) -> list[Any]:
        """Every page of a Neutron listing (``pagination_max_limit``: cloud/pages.py)."""
        return self._pages(self.conn.network, path, key, params)

    def _neutron_project(
        self, path: str, key: str, params: dict[str, Any] | None = None
    ) -> list[Any]:
        """Every page of a Neutron listing of this project's own resources (in a cloud
        thread: the project is the token's, which may need authenticating first)."""
        scoped = {**(params or {}), "project_id": self.conn.current_project_id}
        return self._neutron_list(path, key, scoped)

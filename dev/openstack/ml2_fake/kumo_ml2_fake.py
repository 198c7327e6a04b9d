"""kumo_fake — a tiny ML2 mechanism driver for Kumo's local OpenStack lab.

Why: the lab runs neutron-server without any agent, so no real mechanism driver can
bind ports and Nova's servers would go ERROR ("Binding failed for port"). This driver
binds every port to the first segment offered, with status ACTIVE, so ports get IPs
and servers on the fake hypervisors go ACTIVE. Registered under the entry point
`neutron.ml2.mechanism_drivers` as `kumo_fake` (see services/neutron.sh).
"""
from neutron_lib.plugins.ml2 import api


class KumoFakeMechanismDriver(api.MechanismDriver):
    def initialize(self):
        pass

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(segment[api.ID], "other", {"port_filter": False}, status="ACTIVE")
            return

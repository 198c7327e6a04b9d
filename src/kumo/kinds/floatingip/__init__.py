"""FloatingIP: a Neutron floating IP, held or following a VirtualMachine or LoadBalancer."""

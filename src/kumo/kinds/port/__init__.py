"""Port: a Neutron port with a fixed address that VirtualMachines boot on, kept through their replacement."""

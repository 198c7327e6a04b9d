"""Share: a Manila share whose access rules follow VirtualMachines and groups."""

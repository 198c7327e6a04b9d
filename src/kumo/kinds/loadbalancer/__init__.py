"""LoadBalancer → an Octavia load balancer whose pools follow VirtualMachineGroups."""

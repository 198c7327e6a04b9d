"""KumoMachine → one VirtualMachine for a Cluster API Machine, never rebuilt."""

"""SecurityGroup: a Neutron security group and its rules (see actuator.py)."""

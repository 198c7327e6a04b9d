"""DNSRecord → one Designate recordset that follows its target (a LoadBalancer's VIP, a
VM's address, a group's members' addresses) or holds literal values."""

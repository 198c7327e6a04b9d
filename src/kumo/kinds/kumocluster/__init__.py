"""KumoCluster → a Cluster API Cluster's infrastructure, made of Kumo objects."""

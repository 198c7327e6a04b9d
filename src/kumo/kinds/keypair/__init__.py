"""KeyPair → one Nova keypair, its public key inline or from a ConfigMap or Secret key."""

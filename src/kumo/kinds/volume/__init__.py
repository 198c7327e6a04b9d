"""The Volume kind: a Cinder volume."""

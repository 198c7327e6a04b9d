"""Benchmarks (not part of `make test`): `make bench` / `python -m bench`."""

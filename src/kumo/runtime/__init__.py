"""Runtime wiring: the only package that imports kopf. Watches objects, queues work,
runs the engine, writes to the Kubernetes API, watches the cloud for drift."""

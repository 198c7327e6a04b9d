"""One small package per kind: pure planning functions (``plan.py``) and the actuator
that observes the cloud, diffs with the plan and acts (``actuator.py``)."""

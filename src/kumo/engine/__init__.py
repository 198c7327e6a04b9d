"""The generic reconcile engine: knows the shape of a reconcile, knows no kind.

Nothing here imports kopf or openstacksdk; the runtime feeds objects in and applies
what comes out, so the engine and every kind's decisions are testable without servers.
"""

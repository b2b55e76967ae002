"""Adapters that put third-party simulators (robosuite, Meta-World) behind the Env contract."""

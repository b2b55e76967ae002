"""Simulated manipulation: the SO-101 MuJoCo twin, robosuite and Meta-World adapters, rendering."""

from sim.config import SimConfig
from sim.factory import make_env

__all__ = ["SimConfig", "make_env"]

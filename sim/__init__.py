"""Simulated manipulation: the SO-101 MuJoCo twin, robosuite and Meta-World adapters, rendering."""

"""Evaluating policies: episodes on evaluation-only seeds (``episodes``), the perturbation grid
(``perturbation_grid``) and the per-unit table of the twin's arms (``units``). Above ``deployment``.
"""

"""Scorer backends; ``vlm.make_scorer`` chooses one from its config type."""

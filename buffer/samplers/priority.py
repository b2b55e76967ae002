"""The one rule that turns clip scores and TD errors into sampling priorities (every sampler uses it).

- score factor: (score + score_eps) ** score_exponent, with ``default_score`` standing in for
  transitions no clip score covers yet (NaN);
- TD priority: (|TD| + eps) ** alpha (PER, Schaul et al. 2016);
- VLM x TD: their product.
"""

from __future__ import annotations

import numpy as np


def score_factor(
    scores: np.ndarray, default_score: float, score_eps: float, score_exponent: float
) -> np.ndarray:
    """float64 (score + score_eps) ** score_exponent per transition; NaN scores count as ``default_score``."""
    s = np.asarray(scores, np.float64)
    s = np.where(np.isnan(s), default_score, s)
    return (s + score_eps) ** score_exponent


def td_factor(td_priority: np.ndarray, alpha: float) -> np.ndarray:
    """float64 p ** alpha of TD priorities p = |TD| + eps (kept before the exponent so alpha can change)."""
    return np.asarray(td_priority, np.float64) ** alpha

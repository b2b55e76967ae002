"""The reward every sim env returns, from its success flag and privileged progress."""

from __future__ import annotations


def shaped_or_sparse_reward(kind: str, success: bool, progress: float) -> float:
    """sparse: 1 on success, else 0. shaped: 1 on success, else ``progress - 1`` (in [-1, 0)).

    Shaped rewards stay negative until success, so an agent never gains by delaying a success that ends
    the episode (a positive dense reward would pay it to hover next to the goal forever).
    """
    if kind == "sparse":
        return float(success)
    return 1.0 if success else float(progress) - 1.0

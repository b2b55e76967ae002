"""The yes/no probability maths shared by the local (logits) and served (top logprobs) backends.

score = P(yes) / (P(yes) + P(no)), each side summed over the answer's spellings ("yes", " Yes", "YES"...)
that the tokenizer encodes as a single token. Computed in log space: sigmoid(logsumexp(yes) -
logsumexp(no)), so the softmax normaliser cancels and tiny probabilities do not underflow.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from vlm.errors import VLMError

YES_WORDS = ("yes", "Yes", "YES")
NO_WORDS = ("no", "No", "NO")
# Byte-level BPE marks a leading space with "Ġ", SentencePiece with "▁".
_SPACE_MARKS = (" ", "Ġ", "▁")


def answer_token_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Ids of every yes and no spelling (with and without a leading space) that is a single token.

    Raises:
        VLMError: if the tokenizer has no single-token spelling of yes or of no.
    """
    sides: list[list[int]] = []
    for words in (YES_WORDS, NO_WORDS):
        ids: set[int] = set()
        for word in words:
            for text in (word, " " + word):
                encoded = tokenizer.encode(text, add_special_tokens=False)
                if len(encoded) == 1:
                    ids.add(int(encoded[0]))
        sides.append(sorted(ids))
    yes_ids, no_ids = sides
    if not yes_ids or not no_ids or set(yes_ids) & set(no_ids):
        raise VLMError(
            "the model's tokenizer has no single-token 'yes'/'no' answers (found yes ids "
            f"{yes_ids}, no ids {no_ids}); yes/no scoring needs a chat VLM whose vocabulary has them"
        )
    return yes_ids, no_ids


def yes_probability(logits: Any, yes_ids: list[int], no_ids: list[int]) -> np.ndarray:
    """float32 [N] P(yes)/(P(yes)+P(no)) from next-token logits [N, vocab] (a torch tensor)."""
    import torch

    logits = logits.float()
    margin = torch.logsumexp(logits[:, yes_ids], dim=-1) - torch.logsumexp(logits[:, no_ids], dim=-1)
    return torch.sigmoid(margin).cpu().numpy().astype(np.float32)


def answer_side(token: str) -> str | None:
    """``"yes"``, ``"no"`` or None for a decoded token string such as ``" Yes"`` or ``"Ġno"``."""
    text = token
    for mark in _SPACE_MARKS:
        text = text.removeprefix(mark)
    if text in YES_WORDS:
        return "yes"
    if text in NO_WORDS:
        return "no"
    return None


def yes_probability_from_logprobs(top_logprobs: Iterable[tuple[str, float]]) -> float | None:
    """P(yes)/(P(yes)+P(no)) from (token, logprob) alternatives; None when neither answer is listed.

    When only one side is listed the other's mass is below the smallest listed one; it is taken as zero,
    so the score saturates (a server listing 20 alternatives leaves < 5% unaccounted for).
    """
    yes, no = [], []
    for token, logprob in top_logprobs:
        side = answer_side(token)
        if side == "yes":
            yes.append(logprob)
        elif side == "no":
            no.append(logprob)
    if not yes and not no:
        return None
    if not no:
        return 1.0
    if not yes:
        return 0.0
    margin = _logsumexp(yes) - _logsumexp(no)
    return 1.0 / (1.0 + math.exp(-margin)) if margin > -700 else 0.0


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vlm import VLMError
from vlm.answer_tokens import answer_side, answer_token_ids, yes_probability, yes_probability_from_logprobs
from vlm.random_models import train_bpe_tokenizer


def test_answer_ids_cover_every_single_token_spelling():
    tok = train_bpe_tokenizer(["<pad>"], pad_token="<pad>")
    yes_ids, no_ids = answer_token_ids(tok)
    assert len(yes_ids) == 6 and len(no_ids) == 6  # 3 spellings x (with, without leading space)
    assert tok.convert_ids_to_tokens(yes_ids[:1])[0].lstrip("Ġ").lower() == "yes"


def test_tokenizer_without_yes_no_tokens_is_rejected():
    class CharTokenizer:
        def encode(self, text, add_special_tokens=False):
            return [ord(c) for c in text]

    with pytest.raises(VLMError, match="single-token 'yes'/'no'"):
        answer_token_ids(CharTokenizer())


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.floats(-30, 30), min_size=1, max_size=3),
    st.lists(st.floats(-30, 30), min_size=1, max_size=3),
    st.lists(st.floats(-30, 30), min_size=0, max_size=4),
)
def test_yes_probability_matches_normalised_softmax_mass(yes, no, other):
    logits = torch.tensor([yes + no + other], dtype=torch.float64)
    yes_ids = list(range(len(yes)))
    no_ids = list(range(len(yes), len(yes) + len(no)))
    probs = torch.softmax(logits, -1)[0]
    expected = probs[yes_ids].sum() / (probs[yes_ids].sum() + probs[no_ids].sum())
    got = yes_probability(logits, yes_ids, no_ids)
    assert got.dtype == np.float32
    assert got[0] == pytest.approx(float(expected), abs=1e-6)


def test_served_logprobs_give_the_same_probability():
    top = [(" Yes", math.log(0.3)), ("yes", math.log(0.1)), ("Ġno", math.log(0.2)), ("maybe", math.log(0.4))]
    assert yes_probability_from_logprobs(top) == pytest.approx(0.4 / 0.6)
    assert yes_probability_from_logprobs([("▁YES", -0.1), ("ok", -3)]) == 1.0
    assert yes_probability_from_logprobs([("NO", -0.1)]) == 0.0
    assert yes_probability_from_logprobs([("maybe", -0.1)]) is None
    assert answer_side("Ġyes") == "yes" and answer_side(" nope") is None

import threading

import numpy as np
import pytest

from vlm import Clip, VLMError
from vlm.batcher import MicroBatcher


class Gated:
    """Records each call's clip count; the first call waits for the gate; clips with a 255 pixel fail."""

    scorer_id = model_id = "gated"

    def __init__(self):
        self.gate, self.entered, self.calls = threading.Event(), threading.Event(), []

    def score(self, clips, prompt):
        self.calls.append((prompt, len(clips)))
        self.entered.set()
        self.gate.wait(30)
        if any(c.frames.max() == 255 for c in clips):
            raise VLMError("bad clip")
        return np.array([c.frames.mean() / 255 for c in clips], np.float32)

    def close(self):
        pass


def _clip(value):
    return Clip(np.full((1, 2, 2, 3), value, np.uint8))


def test_queued_requests_with_one_prompt_share_a_call_and_failures_stay_isolated():
    scorer = Gated()
    batcher = MicroBatcher(scorer, max_batch=4, wait_s=0.01)
    first = batcher.submit([_clip(10)], "p")
    assert scorer.entered.wait(30)  # the first call is in flight and blocked
    same = [
        batcher.submit([_clip(20)], "p"),
        batcher.submit([_clip(255)], "p"),
        batcher.submit([_clip(30)], "p"),
    ]
    other = batcher.submit([_clip(40), _clip(50)], "q")
    scorer.gate.set()
    assert first.result(30)[0] == pytest.approx(10 / 255)
    assert same[0].result(30)[0] == pytest.approx(20 / 255)
    assert same[2].result(30)[0] == pytest.approx(30 / 255)
    with pytest.raises(VLMError, match="bad clip"):
        same[1].result(30)
    np.testing.assert_allclose(other.result(30), [40 / 255, 50 / 255])
    batcher.close()
    # one call for the first request, one for the three queued "p" requests (which failed, so each was
    # retried alone), one for "q"
    assert scorer.calls == [("p", 1), ("p", 3), ("p", 1), ("p", 1), ("p", 1), ("q", 2)]
    assert batcher.calls == 6 and batcher.clips == 5

import numpy as np
import pytest
import torch

from vlm import HFConfig, VLMError, make_scorer
from vlm.backends.hf import HFScorer

PROMPT = "Did the robot lift the cube? Answer yes or no."


@pytest.mark.parametrize("arch", ["qwen2-vl", "idefics3"])
def test_tiny_vlm_scores_are_batch_invariant(vlm_dirs, clips, arch):
    scorer = make_scorer(HFConfig(model=vlm_dirs[arch], num_frames=3, batch_size=2))
    mixed = [*clips, clips[0].frames[-1:]]  # a one-frame clip: fewer images than num_frames
    together = scorer.score(mixed, PROMPT)
    alone = np.array([scorer.score([c], PROMPT)[0] for c in mixed])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert together.dtype == np.float32 and np.all((together > 0) & (together < 1))
    assert len(np.unique(together)) > 1  # the frames matter
    assert scorer.scorer_id == f"hf-{arch}" and scorer.model_id == vlm_dirs[arch]
    assert scorer.score([], PROMPT).shape == (0,)


class ControlledLogits(torch.nn.Module):
    """Stands in for a VLM: next-token logits set by the test, one row per clip in the batch."""

    def __init__(self, rows):
        super().__init__()
        self.rows = torch.tensor(rows, dtype=torch.float32)
        self.seen = []

    def forward(self, input_ids, attention_mask=None, logits_to_keep=0, **images):
        self.seen.append((input_ids.shape, sorted(images), logits_to_keep))
        n = input_ids.shape[0]
        logits = torch.full((n, input_ids.shape[1], self.rows.shape[1]), -50.0)
        logits[:, -1] = self.rows[:n]
        self.rows = self.rows[n:]
        return type("Out", (), {"logits": logits})()


def test_probability_maths_on_controlled_logits(vlm_dirs, clips):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(vlm_dirs["idefics3"])
    vocab = len(processor.tokenizer)
    probe = HFScorer(
        HFConfig(model="controlled"), model=ControlledLogits([[0.0] * vocab]), processor=processor
    )
    yes, no = probe.yes_ids, probe.no_ids
    rows = np.zeros((3, vocab), np.float32)
    rows[:, 0] = 5.0  # a big non-answer token: must not matter (the normaliser cancels)
    rows[0, yes[0]], rows[0, no[0]] = 2.0, 0.0  # one spelling each
    rows[1, yes[0]], rows[1, yes[1]], rows[1, no[2]] = 1.0, 1.0, 3.0  # yes mass split over two spellings
    rows[2, yes] = -40.0  # "no" overwhelms
    model = ControlledLogits(rows.tolist())
    scorer = HFScorer(HFConfig(model="controlled", batch_size=2), model=model, processor=processor)
    scores = scorer.score(clips, PROMPT)

    def expected(row):
        p = np.exp(row - row.max())
        return p[yes].sum() / (p[yes].sum() + p[no].sum())

    np.testing.assert_allclose(scores, [expected(r) for r in rows], rtol=1e-5)
    assert scores[2] < 1e-6
    assert [s[0][0] for s in model.seen] == [2, 1]  # batches of cfg.batch_size
    assert "pixel_values" in model.seen[0][1] and model.seen[0][2] == 1  # images in, last logits only


def test_missing_local_model_fails_fast_with_a_fix(tmp_path):
    with pytest.raises(VLMError, match=r"not found or has no config\.json") as info:
        make_scorer(HFConfig(model=str(tmp_path / "nope")))
    assert "\n" not in str(info.value)


def test_uncached_hub_id_offline_says_how_to_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(VLMError, match="hf download"):
        make_scorer(HFConfig(model="nobody-here/no-such-vlm-xyz"))


def test_a_text_only_model_is_rejected(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=10)).save_pretrained(tmp_path)
    with pytest.raises(VLMError, match="image-text-to-text"):
        make_scorer(HFConfig(model=str(tmp_path)))


def test_unreachable_hub_fails_fast_instead_of_retrying(monkeypatch):
    import socket

    from huggingface_hub import constants

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(VLMError, match=r"127\.0\.0\.1 cannot be reached; download it where there is network"):
        make_scorer(HFConfig(model="nobody-here/no-such-vlm-xyz"))


@pytest.mark.parametrize("arch", ["qwen2-vl", "idefics3"])
def test_on_a_gpu_the_processor_prepares_frames_there(monkeypatch, arch):
    from vlm.random_models import build_random_vlm

    model, processor = build_random_vlm(arch, "tiny")
    on_cpu = HFScorer(HFConfig(model="tiny", device="cpu"), model=model, processor=processor)
    assert "device" not in on_cpu._processor_kwargs
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the model is passed in: nothing moves
    on_gpu = HFScorer(
        HFConfig(model="tiny", device="cuda", dtype="float32"), model=model, processor=processor
    )
    assert on_gpu._processor_kwargs["device"] == "cuda"
    # the kwarg is one the processor takes: the same call on the CPU builds the same inputs
    frames = [np.zeros((16, 16, 3), np.uint8)] * 2
    text = on_cpu._chat_text(2, PROMPT)
    plain = processor(text=[text], images=[frames], return_tensors="pt", **on_cpu._processor_kwargs)
    placed = processor(
        text=[text], images=[frames], return_tensors="pt", **{**on_gpu._processor_kwargs, "device": "cpu"}
    )
    torch.testing.assert_close(placed["pixel_values"], plain["pixel_values"])

"""One contract suite over every scorer backend (the openai one against a real `vlmrl serve` process)."""

import threading

import numpy as np
import pytest

from vlm import (
    CLIPConfig,
    HFConfig,
    OpenAIConfig,
    OracleConfig,
    ScoreCalibration,
    Scorer,
    VLMError,
    apply_calibration,
    make_scorer,
    prompt_hash,
)
from vlm.config import LearnedConfig

PROMPT = "Did the robot push the cube onto the target? Answer yes or no."
BACKENDS = [
    "oracle",
    "oracle-noisy",
    "oracle-calibrated",
    "hf-qwen2-vl",
    "hf-idefics3",
    "clip",
    "siglip",
    "openai",
    "learned",
]


@pytest.fixture(scope="module", params=BACKENDS)
def scorer(request):
    name = request.param
    if name.startswith("oracle"):
        cfg = OracleConfig(noise=0.3 if name == "oracle-noisy" else 0.0, reduce="mean")
    elif name.startswith("hf-"):
        cfg = HFConfig(model=request.getfixturevalue("vlm_dirs")[name[3:]], num_frames=3, batch_size=2)
    elif name in ("clip", "siglip"):
        cfg = CLIPConfig(model=request.getfixturevalue("clip_model_dirs")[name], num_frames=3)
    elif name == "learned":  # random weights; resize: the suite mixes frame sizes in one batch
        path = request.getfixturevalue("tmp_path_factory").mktemp("learned") / "student.pt"
        cfg = LearnedConfig(path=str(request.getfixturevalue("random_learned")(path, PROMPT)), resize=True)
    else:
        server = request.getfixturevalue("hf_server")
        cfg = OpenAIConfig(base_url=server.url, api_key="sekret", num_frames=3, image_format="png")
    built = make_scorer(cfg)
    if name == "oracle-calibrated":  # the wrapper every pipeline puts around a scorer given a calibration
        path = request.getfixturevalue("tmp_path_factory").mktemp("cal") / "cal.json"
        figures = dict(threshold=0.5, auc=1.0, accuracy=1.0, ece=0.0, ece_before=0.0, n_clips=2)
        ScoreCalibration(
            scorer_id="oracle", prompt_hash=prompt_hash(PROMPT), temperature=2.0, **figures
        ).save(path)
        built = apply_calibration(built, path, PROMPT)
    yield built
    built.close()


def _reseeded(scorer):
    # Label noise is random by design; contract checks that need repeatability re-create the oracle.
    if scorer.scorer_id.startswith("oracle-noise"):
        return make_scorer(scorer.cfg)
    return scorer


def test_protocol_ids_and_score_shape(scorer, clip_factory):
    assert isinstance(scorer, Scorer)
    assert scorer.scorer_id and scorer.model_id
    assert all(c.isalnum() or c in "._-" for c in scorer.scorer_id)
    scores = scorer.score(clip_factory(n=5, length=4, seed=2), PROMPT)
    assert scores.shape == (5,) and scores.dtype == np.float32
    assert np.all((scores >= 0) & (scores <= 1)) and np.all(np.isfinite(scores))
    assert scorer.score([], PROMPT).shape == (0,)


def test_oracle_is_labelled_in_its_ids(scorer):
    assert scorer.scorer_id.startswith("oracle") == ("oracle" in scorer.model_id)


def test_deterministic_and_order_equivariant(scorer, clip_factory):
    clips = clip_factory(n=4, seed=3)
    first = _reseeded(scorer).score(clips, PROMPT)
    again = _reseeded(scorer).score(clips, PROMPT)
    np.testing.assert_allclose(first, again, atol=1e-5)
    if not scorer.scorer_id.startswith("oracle-noise"):
        np.testing.assert_allclose(scorer.score(clips[::-1], PROMPT), first[::-1], atol=1e-5)


def test_mixed_lengths_and_sizes_in_one_batch(scorer, clip_factory):
    clips = clip_factory(n=1, length=1, seed=4) + clip_factory(n=1, length=7, side=16, seed=5)
    mixed = _reseeded(scorer).score(clips, PROMPT)
    alone = [_reseeded(scorer).score([c], PROMPT)[0] for c in clips]
    if not scorer.scorer_id.startswith("oracle-noise"):
        np.testing.assert_allclose(mixed, alone, atol=1e-5)
    assert mixed.shape == (2,)


def test_thread_safe(scorer, clip_factory):
    clips = clip_factory(n=3, seed=6)
    expected = _reseeded(scorer).score(clips, PROMPT)
    results, errors = [None] * 3, []

    def work(i):
        try:
            results[i] = scorer.score(clips, PROMPT)
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    for result in results:
        assert result.shape == (3,)
        if not scorer.scorer_id.startswith("oracle-noise"):
            np.testing.assert_allclose(result, expected, atol=1e-5)


def test_malformed_clips_raise_vlm_error(scorer):
    with pytest.raises(VLMError, match="uint8"):
        scorer.score([np.zeros((2, 8, 8, 3), np.float32)], PROMPT)
    with pytest.raises(VLMError, match=r"\[L, H, W, 3\]"):
        scorer.score([np.zeros((2, 8, 8), np.uint8)], PROMPT)

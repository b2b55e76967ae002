import numpy as np
import pytest

from vlm import CLIPConfig, VLMError, make_scorer

GOAL = "a robot arm that has lifted the cube"


@pytest.mark.parametrize("arch", ["clip", "siglip"])
def test_tiny_contrastive_model_scores_clips(clip_model_dirs, clips, arch):
    scorer = make_scorer(CLIPConfig(model=clip_model_dirs[arch], num_frames=3))
    scores = scorer.score(clips, GOAL)
    assert scores.shape == (3,) and scores.dtype == np.float32
    assert np.all((scores >= 0) & (scores <= 1)) and len(np.unique(scores)) == 3
    np.testing.assert_allclose(scorer.score(clips[1:2], GOAL), scores[1:2], atol=1e-6)
    assert scorer.scorer_id == f"clip-{arch}"


def test_pooling_and_projection(clip_model_dirs, clips):
    model = clip_model_dirs["clip"]
    frame_level = make_scorer(CLIPConfig(model=model, num_frames=5))
    per_frame = frame_level.frame_scores(list(clips[0].frames), GOAL)
    for pool, fn in (("mean", np.mean), ("max", np.max), ("last", lambda v: v[-1])):
        pooled = make_scorer(CLIPConfig(model=model, num_frames=5, pool=pool)).score(clips[:1], GOAL)
        assert pooled[0] == pytest.approx(fn(per_frame), abs=1e-6)
    # alpha = 0: score is 1 - |x - g|^2 / 4 = (1 + cos(x, g)) / 2 (plain cosine similarity to the goal).
    import torch

    plain = make_scorer(CLIPConfig(model=model, num_frames=5, projection_alpha=0.0))
    with torch.inference_mode():
        goal, projection = plain._goal_and_projection(GOAL)
    assert torch.allclose(projection, torch.eye(len(goal)))
    scored = plain.frame_scores(list(clips[0].frames[:1]), GOAL)
    pixels = plain.processor(images=list(clips[0].frames[:1]), return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        emb = plain.model.get_image_features(pixel_values=pixels).pooler_output[0]
    cos = torch.nn.functional.cosine_similarity(emb, goal, dim=0).item()
    assert scored[0] == pytest.approx((1 + cos) / 2, abs=1e-5)
    with pytest.raises(VLMError, match="projection_alpha"):
        make_scorer(CLIPConfig(model=model, projection_alpha=2.0))

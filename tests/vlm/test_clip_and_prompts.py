import numpy as np
import pytest

from vlm import Clip, VLMError, as_clip, make_prompt, prompt_hash, scorer_prompt, subsample_indices
from vlm.prompts import TEMPLATES, clip_goal_prompt, goal_phrase


def test_clip_validates_shape_dtype_and_info_length():
    Clip(np.zeros((3, 4, 5, 3), np.uint8), {"progress": np.zeros(3)})
    with pytest.raises(VLMError, match="uint8"):
        Clip(np.zeros((3, 4, 5, 3), np.float32))
    with pytest.raises(VLMError, match=r"\[L, H, W, 3\]"):
        Clip(np.zeros((4, 5, 3), np.uint8))
    with pytest.raises(VLMError, match="progress"):
        Clip(np.zeros((3, 4, 5, 3), np.uint8), {"progress": np.zeros(2)})


def test_as_clip_wraps_arrays_and_single_frames():
    assert as_clip(np.zeros((4, 5, 3), np.uint8)).length == 1
    clip = Clip(np.zeros((2, 4, 5, 3), np.uint8))
    assert as_clip(clip) is clip


@pytest.mark.parametrize("length,k", [(1, 4), (8, 1), (8, 3), (32, 8), (5, 5), (7, 100)])
def test_subsample_keeps_last_frame_and_order(length, k):
    idx = subsample_indices(length, k)
    assert idx[-1] == length - 1
    assert len(idx) == min(length, k)
    assert np.all(np.diff(idx) > 0)


def test_subsample_clip_indexes_info_with_frames():
    frames = np.arange(10, dtype=np.uint8)[:, None, None, None] * np.ones((1, 2, 2, 3), np.uint8)
    clip = Clip(frames, {"progress": np.linspace(0, 1, 10)}).subsample(3)
    assert clip.length == 3
    np.testing.assert_array_equal(clip.frames[:, 0, 0, 0], clip.info["progress"] * 9)


def test_prompts_cover_every_kind_and_hash_is_stable():
    goals = ("Pick up the red cube.", "Move the robot gripper to the small green ball.")
    prompts = {make_prompt(g, k) for g in goals for k in TEMPLATES}
    assert len(prompts) == len(goals) * len(TEMPLATES)
    assert all("yes or no" in p for p in prompts)
    assert make_prompt("Lift the cube.") == make_prompt("lift the cube")
    assert prompt_hash("a") == prompt_hash("a") != prompt_hash("a ")
    assert len(prompt_hash("x")) == 12
    with pytest.raises(VLMError, match="non-empty goal"):
        make_prompt(" . ")
    with pytest.raises(VLMError, match="prompt kind"):
        make_prompt("lift", "vibes")  # type: ignore[arg-type]


def test_scorer_prompt_is_the_goal_question_or_for_clip_the_caption_of_one_description():
    description = "Push the red cube onto the blue circle on the table."
    assert goal_phrase(description) == "push the red cube onto the blue circle on the table"
    question = scorer_prompt(description, "hf")
    assert question == scorer_prompt(description, "oracle") == make_prompt(description, "goal")
    assert "The robot's task: push the red cube onto the blue circle on the table." in question
    caption = scorer_prompt(description, "clip")
    assert caption == clip_goal_prompt(description)
    assert caption == "a robot arm that has managed to push the red cube onto the blue circle on the table"
    assert "yes or no" not in caption
    with pytest.raises(VLMError, match="caption needs a non-empty"):
        scorer_prompt("", "clip")

"""scorer:learned beyond the contract suite: its file, its refusals, and that it reads pixels and time."""

import numpy as np
import pytest

from vlm import Clip, VLMError, make_scorer
from vlm.backends.learned import build_net, clip_frames, load_learned, save_learned
from vlm.config import LearnedConfig

PROMPT = "Did the robot lift the cube? Answer yes or no."


@pytest.fixture
def student(tmp_path, random_learned):
    return random_learned(tmp_path / "student.pt", PROMPT, image_hw=(16, 20), camera="front")


def _clips(n, hw=(16, 20), length=5, seed=0):
    rng = np.random.default_rng(seed)
    return [Clip(rng.integers(0, 256, (length, *hw, 3), dtype=np.uint8)) for _ in range(n)]


def test_saved_file_scores_the_same_after_reload(student):
    clips = _clips(4)
    first = make_scorer(LearnedConfig(path=str(student))).score(clips, PROMPT)
    again = make_scorer(LearnedConfig(path=str(student))).score(clips, PROMPT)
    np.testing.assert_array_equal(first, again)
    assert len(set(np.round(first, 6))) > 1  # different pixels, different scores


def test_time_order_matters(student):
    clip = _clips(1, length=6)[0]
    scorer = make_scorer(LearnedConfig(path=str(student)))
    forward = scorer.score([clip], PROMPT)[0]
    rewound = scorer.score([Clip(clip.frames[::-1].copy())], PROMPT)[0]
    assert forward != rewound


def test_refuses_another_frame_size_unless_resizing(student):
    scorer = make_scorer(LearnedConfig(path=str(student)))
    with pytest.raises(VLMError, match=r"16x20 px frames, got 24x24"):
        scorer.score(_clips(1, hw=(24, 24)), PROMPT)
    resized = make_scorer(LearnedConfig(path=str(student), resize=True)).score(_clips(1, hw=(24, 24)), PROMPT)
    assert resized.shape == (1,) and 0 <= resized[0] <= 1


def test_check_source_refuses_another_camera_or_size(student):
    scorer = make_scorer(LearnedConfig(path=str(student)))
    scorer.check_source("front", (16, 20))
    with pytest.raises(VLMError, match=r"fitted on camera 'front' at 16x20 px.*camera 'wrist'"):
        scorer.check_source("wrist", (16, 20))
    with pytest.raises(VLMError, match=r"camera 'front' at 64x64 px"):
        scorer.check_source("front", (64, 64))


def test_refuses_another_prompt(student):
    with pytest.raises(VLMError, match="fitted for the prompt"):
        make_scorer(LearnedConfig(path=str(student))).score(_clips(1), "Is the drawer open?")


def test_bad_files_fail_in_one_line(tmp_path, student):
    with pytest.raises(VLMError, match="not found; fit one with"):
        make_scorer(LearnedConfig(path=str(tmp_path / "missing.pt")))
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a torch file")
    with pytest.raises(VLMError, match="not a readable learned scorer file") as err:
        make_scorer(LearnedConfig(path=str(garbage)))
    assert "\n" not in str(err.value)
    import torch

    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(VLMError, match="not a learned scorer file"):
        make_scorer(LearnedConfig(path=str(other)))
    meta, _ = load_learned(student)
    wrong = tmp_path / "wrong.pt"
    save_learned(wrong, build_net(3, 8), meta)  # weights of a 3-frame net under a 4-frame header
    with pytest.raises(VLMError, match="weights do not fit"):
        make_scorer(LearnedConfig(path=str(wrong)))


def test_save_is_atomic(tmp_path, student, monkeypatch):
    import torch

    meta, _ = load_learned(student)
    before = student.read_bytes()

    def broken_save(obj, f, *args, **kwargs):
        with open(f, "wb") as half:
            half.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError):
        save_learned(student, build_net(4, 8), meta)
    assert student.read_bytes() == before  # the old file is untouched


def test_short_clips_are_padded_with_their_first_frame():
    frames = np.arange(2 * 2 * 2 * 3, dtype=np.uint8).reshape(2, 2, 2, 3)
    out = clip_frames(Clip(frames), 4)
    assert out.shape == (4, 2, 2, 3)
    np.testing.assert_array_equal(out[:3], np.repeat(frames[:1], 3, axis=0))
    np.testing.assert_array_equal(out[3], frames[1])

"""vlmrl scorer fit and vlmrl score --evaluate on a tiny synthetic recording: a bright square rises in successful episodes only."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
import zarr

from buffer import BufferConfig, make_buffer
from vlm import make_scorer
from vlm.config import LearnedConfig, OpenAIConfig, OracleConfig
from vlm.prompts import make_prompt
from vlmrl import cli
from vlmrl.errors import USER_ERRORS, ConfigError
from vlmrl.pipelines import scorer as fit

TASK = "Lift the white square."


def square_frames(rows, cols, side=16):
    frames = np.full((len(rows), side, side, 3), 20, np.uint8)
    for t, (r, c) in enumerate(zip(rows, cols)):
        frames[t, r : r + 3, c : c + 3] = 250
    return frames


def make_store(
    path, n_success=6, n_fail=4, steps=12, side=16, camera="front", info=("success", "progress"), seed=0
):
    """Successes: the square rises from the bottom to the top, success on the final row. Failures: it
    slides along the bottom. Returns the store path."""
    rng = np.random.default_rng(seed)
    obs = {"state": ((2,), np.dtype(np.float32)), f"pixels/{camera}": ((side, side, 3), np.dtype(np.uint8))}
    buf = make_buffer(BufferConfig(storage="zarr", capacity_steps=512), obs, 2, info, path=str(path))
    for ok in [True] * n_success + [False] * n_fail:
        t = steps + int(rng.integers(-2, 3))
        col = int(rng.integers(0, side - 3))
        if ok:
            rows = np.round(np.linspace(side - 3, 0, t + 1)).astype(int)
            cols = np.full(t + 1, col)
            progress = np.linspace(0, 1, t + 1).astype(np.float32)
        else:
            rows = np.full(t + 1, side - 3)
            cols = np.clip(col + np.arange(t + 1) % 5, 0, side - 3)
            progress = np.linspace(0, 0.3, t + 1).astype(np.float32)
        infos = {"success": (progress >= 1).astype(np.float32), "progress": progress}
        buf.add_episode(
            obs={
                "state": np.zeros((t + 1, 2), np.float32),
                f"pixels/{camera}": square_frames(rows, cols, side),
            },
            action=np.zeros((t, 2), np.float32),
            reward=np.zeros(t, np.float32),
            terminated=np.eye(1, t, t - 1, dtype=bool)[0] if ok else np.zeros(t, bool),
            truncated=np.zeros(t, bool) if ok else np.eye(1, t, t - 1, dtype=bool)[0],
            info={k: infos[k] for k in info},
        )
    buf.close()
    zarr.open_group(str(path), mode="a").attrs["vlmrl_record"] = {
        "task_description": TASK,
        "control_hz": 10.0,
    }
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("rec") / "episodes.zarr")


def fit_cfg(store, out, **kw):
    base = dict(
        action="fit",
        episodes=(store,),
        out=out,
        clip_length=3,
        clip_stride=2,
        epochs=12,
        patience=12,
        width=8,
        lr=3e-3,
        shift_px=1,
        progress=False,
    )
    return fit.Config(**{**base, **kw})


def test_fit_learns_the_task_and_writes_a_usable_scorer(store, tmp_path):
    torch.set_num_threads(1)
    out = tmp_path / "student.pt"
    assert fit.main(fit_cfg(store, out)) == 0
    run_dir = tmp_path / "student-fit"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        summary["heldout"]["auc"] >= 0.9 and summary["camera"] == "front" and summary["image_hw"] == [16, 16]
    )
    for name in ("report.md", "roc.png", "reliability.png", "frames.png", "checkpoint.pt"):
        assert (run_dir / name).stat().st_size > 0
    assert list((run_dir / "tb").iterdir())
    # The file is a scorer: a rising square scores above a sliding one, and above itself played backwards.
    scorer = make_scorer(LearnedConfig(path=str(out)))
    rising = square_frames(np.array([13, 10, 6, 3, 0]), np.full(5, 6))
    sliding = square_frames(np.full(5, 13), np.arange(5) + 4)
    s_rise, s_slide, s_rewound = scorer.score([rising, sliding, rising[::-1].copy()], make_prompt(TASK))
    assert s_rise > 0.5 > s_slide and s_rise > s_rewound
    assert scorer.meta["labels"] == "success" and 0 < scorer.meta["threshold"] < 1


def test_resume_continues_where_the_checkpoint_stopped(store, tmp_path):
    torch.set_num_threads(1)
    straight = tmp_path / "straight.pt"
    fit.main(fit_cfg(store, straight, epochs=3, patience=99))
    halves = tmp_path / "halves.pt"
    fit.main(fit_cfg(store, halves, epochs=1, patience=99, run_dir=tmp_path / "halves-fit"))
    with pytest.raises(ConfigError, match="holds a fit already"):
        fit.main(fit_cfg(store, halves, epochs=3, patience=99, run_dir=tmp_path / "halves-fit"))
    fit.main(fit_cfg(store, halves, epochs=3, patience=99, run_dir=tmp_path / "halves-fit", resume=True))
    a, b = torch.load(straight, weights_only=True), torch.load(halves, weights_only=True)
    for key in a["state_dict"]:
        torch.testing.assert_close(a["state_dict"][key], b["state_dict"][key], rtol=0, atol=0)
    history = json.loads((tmp_path / "halves-fit" / "summary.json").read_text())["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3]
    with pytest.raises(ConfigError, match="other options or data"):
        fit.main(fit_cfg(store, halves, epochs=5, lr=1e-2, run_dir=tmp_path / "halves-fit", resume=True))


def test_teacher_labels_distil_a_noisy_oracle(store, tmp_path):
    torch.set_num_threads(1)
    out = tmp_path / "student.pt"
    fit.main(fit_cfg(store, out, labels="teacher", teacher=OracleConfig(noise=0.2), epochs=1))
    assert make_scorer(LearnedConfig(path=str(out))).meta["labels"] == "teacher oracle-noise0.2"


def _nothing_written(tmp_path, out):
    assert not out.exists() and not (tmp_path / f"{out.stem}-fit").exists()


def test_bad_input_fails_in_one_line_and_writes_nothing(store, tmp_path):
    out = tmp_path / "student.pt"
    unlabelled = make_store(tmp_path / "unlabelled.zarr", n_success=2, n_fail=1, info=("progress",))
    with pytest.raises(ConfigError, match="stores no per-step success info"):
        fit.main(fit_cfg(unlabelled, out))
    _nothing_written(tmp_path, out)
    other = make_store(tmp_path / "other.zarr", n_success=2, n_fail=1, side=24)
    with pytest.raises(ConfigError, match=r"fit on stores of one camera and size"):
        fit.main(fit_cfg(store, out, episodes=(store, other)))
    with pytest.raises(ConfigError, match=r"--camera wrist: not recorded"):
        fit.main(fit_cfg(store, out, camera="wrist"))
    teacher = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=1, max_retries=0)
    with pytest.raises(USER_ERRORS) as err:
        fit.main(fit_cfg(store, out, labels="teacher", teacher=teacher))
    assert "\n" not in str(err.value) and "127.0.0.1:9" in str(err.value)
    only_failures = make_store(tmp_path / "only.zarr", n_success=0, n_fail=3)
    with pytest.raises(ConfigError, match="record failed and successful episodes"):
        fit.main(fit_cfg(only_failures, out))
    _nothing_written(tmp_path, out)


def test_cli_verb(store, tmp_path, capsys):
    code = cli.main(
        [
            "scorer",
            "fit",
            str(store),
            "--out",
            str(tmp_path / "s.pt"),
            "--labels",
            "progress",
            "--epochs",
            "2",
            "--clip-length",
            "3",
            "--width",
            "4",
            "--no-progress",
        ]
    )
    assert code == 0 and (tmp_path / "s.pt").is_file()
    assert "held-out AUC" in capsys.readouterr().out
    assert cli.main(["scorer", "fit", str(tmp_path / "missing.zarr"), "--out", str(tmp_path / "t.pt")]) == 1


def eval_cfg(store, tmp_path, scorer=None, **kw):
    from vlmrl.pipelines import score

    base = dict(episodes=store, scorer=scorer or OracleConfig(), clip_length=3, clip_stride=2, evaluate=True)
    return score.Config(**{**base, "out_dir": tmp_path / "report", **kw})


def test_evaluate_ranks_scorers_by_their_noise(store, tmp_path, random_student):
    from vlmrl.pipelines import score

    compare = ("scorer:oracle --scorer.noise 0.4", f"scorer:learned --scorer.path {random_student}")
    cfg = eval_cfg(store, tmp_path, compare=compare, json=tmp_path / "figures.json")
    columns_before = sorted(zarr.open_group(str(store), mode="r").array_keys())
    assert score.main(cfg) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())
    rows = {r["scorer"]: r for r in figures["scorers"]}
    assert list(rows) == ["oracle", "oracle-noise0.4", "learned-random"]
    exact, noisy = rows["oracle"], rows["oracle-noise0.4"]
    # The oracle reads progress at the window's last frame: it ranks success windows perfectly here
    # (failures never pass progress 0.3), and its values rise along every successful episode.
    assert exact["auc"] == 1.0 and exact["voc"] > 0.9
    assert noisy["auc"] < 0.8 and noisy["voc"] < exact["voc"]
    assert all(r["clips"] == exact["clips"] > 0 for r in rows.values())
    # clips/s is reported, not judged: rates are measured in benchmarks/scoring.py
    assert all(math.isfinite(r["clips_per_s"]) for r in rows.values())
    assert figures["n_successful_episodes"] == 6 and figures["n_episodes"] == 10
    md = (tmp_path / "report" / "evaluation.md").read_text()
    assert "| `oracle-noise0.4` |" in md and "roc.png" in md
    assert (tmp_path / "report" / "roc.png").stat().st_size > 0
    assert (tmp_path / "report" / "reliability.png").stat().st_size > 0
    # Evaluation reads the recording only.
    assert sorted(zarr.open_group(str(store), mode="r").array_keys()) == columns_before


@pytest.fixture
def random_student(tmp_path):
    from vlm.random_models import save_random_student

    return save_random_student(tmp_path / "random.pt", make_prompt(TASK), side=16, width=4)


def test_evaluate_refuses_bad_input_in_one_line(store, tmp_path, random_student):
    from vlmrl.pipelines import score

    with pytest.raises(ConfigError, match="--compare 'scorer:nope'"):
        score.main(eval_cfg(store, tmp_path, compare=("scorer:nope",)))
    unlabelled = make_store(tmp_path / "unlabelled.zarr", n_success=2, n_fail=1, info=("progress",))
    with pytest.raises(ConfigError, match="stores no per-step success info"):
        score.main(eval_cfg(unlabelled, tmp_path))
    wide = make_store(tmp_path / "wide.zarr", n_success=2, n_fail=1, side=24)
    with pytest.raises(USER_ERRORS, match=r"fitted on camera 'front' at 16x16 px"):
        score.main(eval_cfg(wide, tmp_path, scorer=LearnedConfig(path=str(random_student))))
    with pytest.raises(ConfigError, match="go with --evaluate"):
        score.main(eval_cfg(store, tmp_path, evaluate=False, json=tmp_path / "x.json"))
    assert not (tmp_path / "report").exists()


def test_lerobot_export_evaluates_and_fits_like_the_store(store, tmp_path):
    from buffer.io import export_lerobot
    from vlmrl.pipelines import score

    obs = {"state": ((2,), np.dtype(np.float32)), "pixels/front": ((16, 16, 3), np.dtype(np.uint8))}
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=512), obs, 2, ("success", "progress"), path=str(store)
    )
    root = tmp_path / "lerobot"
    export_lerobot(buf, root, fps=10, task=TASK)
    buf.close()
    figures = {}
    for name, path in (("zarr", store), ("lerobot", root)):
        score.main(eval_cfg(path, tmp_path / name, json=tmp_path / f"{name}.json"))
        figures[name] = json.loads((tmp_path / f"{name}.json").read_text())["scorers"][0]
    for key in ("clips", "auc", "voc", "ece"):
        assert figures["lerobot"][key] == pytest.approx(figures["zarr"][key])
    out = tmp_path / "from-lerobot.pt"
    assert fit.main(fit_cfg(root, out, epochs=1)) == 0
    assert make_scorer(LearnedConfig(path=str(out))).meta["prompt"] == make_prompt(TASK)


def test_best_threshold_is_on_the_raw_scores():
    scores = np.array([0.01, 0.02, 0.03, 0.2, 0.25, 0.3])  # a student of a noisy teacher: all low
    truth = np.array([False, False, False, True, True, True])
    t = fit.best_threshold(scores, truth)
    assert 0.03 < t < 0.2 and np.mean((scores >= t) == truth) == 1.0


def test_score_refuses_a_learned_scorer_of_another_size_before_writing(store, tmp_path, random_student):
    from vlm import VLMError
    from vlmrl.pipelines import score

    wide = make_store(tmp_path / "wide.zarr", n_success=2, n_fail=1, side=24)
    cfg = score.Config(
        episodes=wide,
        scorer=LearnedConfig(path=str(random_student)),
        clip_length=3,
        out_dir=tmp_path / "report",
    )
    with pytest.raises(
        VLMError, match=r"fitted on camera 'front' at 16x16 px, these frames are camera 'front' at 24x24"
    ):
        score.main(cfg)
    assert not (tmp_path / "report").exists()
    assert score.main(dataclasses.replace(cfg, episodes=store, out_dir=tmp_path / "ok")) == 0


def test_train_renders_at_the_learned_scorers_size_unless_told(random_student, capsys):
    """docs/scorers.md chain: `vlmrl record` stores 128 px frames, `scorer fit` learns at that size, and `vlmrl train
    scorer:learned` rendered 64 px and refused to start."""
    import dataclasses

    from vlm.config import LearnedConfig
    from vlmrl.online.config import TrainConfig
    from vlmrl.pipelines.train import sim_size_for_learned_scorer

    cfg = TrainConfig(scorer=LearnedConfig(path=str(random_student)))
    assert sim_size_for_learned_scorer(cfg).sim.image_size == 16  # the fitted size
    assert "rendering 16 px frames" in capsys.readouterr().out
    told = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, image_size=32))
    assert sim_size_for_learned_scorer(told).sim.image_size == 32  # the user's choice stands
    assert sim_size_for_learned_scorer(TrainConfig()).sim.image_size == TrainConfig().sim.image_size

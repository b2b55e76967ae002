"""Regression (issue 12): `vlmrl score` on a recorded twin store and `vlmrl train` on the same task ask
the scorer the same prompt, for every twin task and for both the yes/no scorers and scorer:clip, so a
score calibration fitted on recordings is accepted by `train --score-calibration` without --prompt."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import vlm
from agents.config import SACConfig
from buffer.config import BufferConfig
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from sim.config import SimConfig
from sim.so101.tasks import TASKS
from vlm import ScoreCalibration, prompt_hash
from vlm.config import CLIPConfig, OracleConfig, WorkerConfig
from vlmrl.pipelines import record, score
from vlmrl.pipelines import train as train_pipeline


class PromptSpy:
    """The oracle scorer, recording every prompt it is asked (stands in for any scorer kind)."""

    def __init__(self, inner: Any, prompts: list[str]) -> None:
        self._inner, self._prompts = inner, prompts

    def score(self, clips: Any, prompt: str) -> Any:
        self._prompts.append(prompt)
        return self._inner.score(clips, prompt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def spy(monkeypatch):
    prompts: list[str] = []
    real = vlm.make_scorer
    monkeypatch.setattr(vlm, "make_scorer", lambda cfg: PromptSpy(real(OracleConfig()), prompts))
    return prompts


def recorded_store(root, task: str):
    cfg = record.Config(
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(root / "calib")),
        env=LeRobotEnvConfig(
            control_hz=1000.0,
            max_episode_steps=6,
            image_size=16,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        task=task,  # type: ignore[arg-type]
        out_dir=root / "rec",
        source="scripted",
        episodes=1,
        export_lerobot=False,
    )
    assert record.main(cfg) == 0
    return root / "rec" / "episodes.zarr"


def tiny_train(run_dir, task: str, scorer: Any, **overrides: Any) -> train_pipeline.TrainConfig:
    cfg = train_pipeline.TrainConfig(
        sim=SimConfig(task=task, cameras=("front",), image_size=16, max_episode_steps=6),
        agent=SACConfig(hidden_dims=(8, 8)),
        buffer=BufferConfig(capacity_steps=200, clip_length=2, clip_stride=2),
        scorer=scorer,
        replay="vlm",
        total_steps=12,
        learning_starts=1_000,
        batch_size=4,
        eval_every_steps=10_000,
        eval_episodes=1,
        video_episodes=0,
        checkpoint_every_steps=10_000,
        worker=WorkerConfig(batch_size=4, batch_wait_s=0.0),
        sync_scoring=True,
        run_dir=str(run_dir),
        progress=False,
    )
    return dataclasses.replace(cfg, **overrides)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_score_and_train_ask_the_same_prompt_for_every_task_and_scorer_kind(task, tmp_path, spy):
    store = recorded_store(tmp_path, task)
    for scorer in (OracleConfig(), CLIPConfig(model="unused-by-the-spy")):
        spy.clear()
        out = tmp_path / f"report-{scorer.kind}"
        cfg = score.Config(episodes=store, scorer=scorer, clip_length=2, clip_stride=2, out_dir=out)
        assert score.main(cfg) == 0
        score_prompt = json.loads((out / "summary.json").read_text())["prompt"]
        assert spy and set(spy) == {score_prompt}
        spy.clear()
        assert train_pipeline.main(tiny_train(tmp_path / f"train-{scorer.kind}", task, scorer)) == 0
        assert spy and set(spy) == {score_prompt}, f"{task} {scorer.kind}: train asked another prompt"
        description = TASKS[task]().description
        assert vlm.scorer_prompt(description, scorer.kind) == score_prompt
        is_caption = "yes or no" not in score_prompt
        assert is_caption == (scorer.kind == "clip")


def test_a_calibration_fitted_by_score_is_accepted_by_train_without_prompt(tmp_path, spy):
    store = recorded_store(tmp_path, "reach")
    out = tmp_path / "report"
    assert score.main(score.Config(episodes=store, clip_length=2, clip_stride=2, out_dir=out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    calibration = ScoreCalibration(
        scorer_id=summary["scorer_id"],
        prompt_hash=prompt_hash(summary["prompt"]),  # what --fit-score-calibration writes
        temperature=2.0,
        threshold=0.5,
        auc=0.9,
        accuracy=0.9,
        ece=0.05,
        ece_before=0.1,
        n_clips=10,
    ).save(tmp_path / "cal.json")
    run = tmp_path / "train"
    cfg = tiny_train(run, "reach", OracleConfig(), score_calibration=calibration)
    assert train_pipeline.main(cfg) == 0
    assert (run / "score_calibration.json").is_file() or any(run.glob("*calibration*.json"))

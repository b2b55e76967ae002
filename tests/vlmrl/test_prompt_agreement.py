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
from vlmrl.online import trainer
from vlmrl.pipelines import record, score
from vlmrl.pipelines import train as train_pipeline
from vlmrl.scorers import choice as scorer_choice


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
    # Every verb opens its scorer through vlmrl.scorers.choice.ready_scorer, which builds it there.
    monkeypatch.setattr(scorer_choice, "make_scorer", lambda cfg: PromptSpy(real(OracleConfig()), prompts))
    monkeypatch.setattr(trainer, "check_reachable", lambda cfg: None)  # the spy stands in for any model
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


def calibration_for(summary: dict[str, Any], path) -> Any:
    """A score calibration as ``vlmrl score --fit-score-calibration`` writes it for this scorer and prompt."""
    return ScoreCalibration(
        scorer_id=summary["scorer_id"],
        prompt_hash=prompt_hash(summary["prompt"]),
        temperature=2.0,
        threshold=0.5,
        auc=0.9,
        accuracy=0.9,
        ece=0.05,
        ece_before=0.1,
        n_clips=10,
    ).save(path)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_train_accepts_a_calibration_fitted_by_score_and_asks_the_same_prompt(task, tmp_path, spy):
    """For every task: the prompt `vlmrl score` builds from a recording is the one `vlmrl train` asks, so
    train takes score's calibration without --prompt (the calibrated scorer is refused otherwise)."""
    store = recorded_store(tmp_path, task)
    kinds = (OracleConfig(), CLIPConfig(model="unused-by-the-spy")) if task == "lift" else (OracleConfig(),)
    for scorer in kinds:
        spy.clear()
        out = tmp_path / f"report-{scorer.kind}"
        cfg = score.Config(episodes=store, scorer=scorer, clip_length=2, clip_stride=2, out_dir=out)
        assert score.main(cfg) == 0
        summary = json.loads((out / "summary.json").read_text())
        score_prompt = summary["prompt"]
        assert spy and set(spy) == {score_prompt}
        assert score_prompt == vlm.scorer_prompt(TASKS[task]().description, scorer.kind)
        assert ("yes or no" not in score_prompt) == (scorer.kind == "clip")  # clip gets the caption
        spy.clear()
        run = tmp_path / f"train-{scorer.kind}"
        calibration = calibration_for(summary, tmp_path / f"cal-{scorer.kind}.json")
        assert train_pipeline.main(tiny_train(run, task, scorer, score_calibration=calibration)) == 0
        assert spy and set(spy) == {score_prompt}, f"{task} {scorer.kind}: train asked another prompt"

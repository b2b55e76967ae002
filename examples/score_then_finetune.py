"""Record on the twin, score and calibrate the scorer, train in simulation, then fine-tune on the "robot".

    python examples/score_then_finetune.py           # a real-sized chain (tens of minutes on 2 cores)
    python examples/score_then_finetune.py --tiny    # a smoke run (the tests run it)

1. `record`: scripted episodes (successes) and episodes cut short (failures) into one zarr store;
2. `score`: an imperfect scorer (the oracle with 20% of its labels flipped) scores them, and a score
   calibration (temperature, threshold) is fitted on the clips labelled by the episodes' success;
3. `train`: SAC in simulation on what a real arm provides (joints + camera), scores calibrated by it;
4. `finetune`: the sim policy continues learning on the arm (here the twin, through the same LeRobot
   path a real SO-101 takes), its reward from the operator's keys: the oracle of steps 2-3 reads the
   simulator's progress, which no arm gives, so finetune leaves it out (a VLM or a learned scorer,
   ``--scorer``, would score the arm's clips, through the sim run's calibration when it is the run's own).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import vlmrl
from agents.config import SACConfig
from buffer.config import BufferConfig
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from sim.config import SimConfig
from vlm.config import OracleConfig


def main(argv: list[str] | None = None) -> vlmrl.RunResult:
    """Run the chain; returns the fine-tuning run's result."""
    parser = argparse.ArgumentParser(description="Record, score, train, fine-tune.")
    parser.add_argument("--out", type=Path, default=Path("runs/score-then-finetune"), help="parent directory")
    parser.add_argument("--tiny", action="store_true", help="a smoke-test budget")
    args = parser.parse_args(argv)
    out, tiny = args.out, args.tiny
    size = 32 if tiny else 64
    scorer = OracleConfig(noise=0.2)
    robot = {
        "task": "reach",
        "robot": ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(out / "motors")),
        # The twin steps 20 Hz of physics per control step but need not wait for the wall clock.
        "twin_control_hz": 20.0,
    }
    env = LeRobotEnvConfig(
        control_hz=200.0,
        max_episode_steps=20 if tiny else 50,
        image_size=size,
        reset_settle_steps=1,
        keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=False),
    )
    recorded = out / "rec"
    for episodes, steps in ((2 if tiny else 20, env.max_episode_steps), (2 if tiny else 10, 3)):
        vlmrl.record(
            vlmrl.RecordConfig(
                source="scripted",
                episodes=episodes,
                out_dir=recorded,
                export_lerobot=False,
                env=dataclasses.replace(env, max_episode_steps=steps),
                **robot,
            )
        )
    calibration = out / "calibration.json"
    vlmrl.score(
        vlmrl.ScoreConfig(
            episodes=recorded / "episodes.zarr", scorer=scorer, fit_score_calibration=calibration
        )
    )
    steps = 60 if tiny else 20_000
    sim = vlmrl.train(
        vlmrl.TrainConfig(
            sim=SimConfig(task="reach", reward="sparse", cameras=("front",), image_size=size),
            policy_obs="robot",
            scorer=scorer,
            score_calibration=calibration,
            agent=SACConfig(hidden_dims=(32, 32) if tiny else (256, 256)),
            total_steps=steps,
            learning_starts=30 if tiny else 1_000,
            eval_every_steps=steps,
            eval_episodes=1 if tiny else 10,
            video_episodes=0,
            run_dir=str(out / "sim"),
            progress=False,
        )
    )
    result = vlmrl.finetune(
        vlmrl.FinetuneConfig(
            from_run=sim.run_dir,
            out_dir=out / "finetune",
            episodes=2 if tiny else 20,
            env=env,
            batch_size=8 if tiny else None,
            buffer=BufferConfig(storage="zarr", capacity_steps=10_000),
            **robot,
        )
    )
    print(f"sim success {sim.metrics['success_rate']:.0%}; fine-tuned policy {result.policy}")
    return result


if __name__ == "__main__":
    main()

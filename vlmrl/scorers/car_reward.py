"""Code as Reward on the SO-101 twin: the observation view, verification episodes, the reward wrapper.

The view (``vlm.reward_program.view``) is built from the twin's ``obs["state"]`` (``sim.so101.env.
STATE_NAMES``), so it is the same for live steps, stored episodes and every task; on a real arm only the
joint keys LeRobot reports are used (``robot_view``). The env itself is not changed: ``CaRReward`` wraps it
and replaces (or adds to) its reward with the dense CaR reward computed in the sandbox worker.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from robot.contract import JOINT_KEYS, STATE_KEY
from sim import make_env
from sim.config import SimConfig
from sim.so101 import geometry
from sim.so101.env import STATE_NAMES
from sim.so101.scripted import ScriptedPolicy
from vlm.reward_program import (
    ROBOT_FIELDS,
    ProgramFileError,
    RewardProgram,
    Sandbox,
    SandboxConfig,
    SandboxError,
    SubtaskResult,
    dense_reward,
    load_program,
    save_program,
    verification_problem,
)
from vlmrl.errors import ConfigError

_INDEX = {name: i for i, name in enumerate(STATE_NAMES)}


def _slice(*names: str) -> list[int]:
    return [_INDEX[n] for n in names]


_JOINTS = _slice(
    "shoulder_pan_rad", "shoulder_lift_rad", "elbow_flex_rad", "wrist_flex_rad", "wrist_roll_rad"
)
_TCP = _slice("tcp_x_m", "tcp_y_m", "tcp_z_m")
_CUBE = _slice("cube_x_m", "cube_y_m", "cube_z_m")
_GOAL = _slice("goal_x_m", "goal_y_m", "goal_z_m")
_CUBE_MINUS_TCP = _slice("cube_minus_tcp_x_m", "cube_minus_tcp_y_m", "cube_minus_tcp_z_m")


def twin_view(state: np.ndarray) -> dict[str, Any]:
    """The view of one SO-101 twin state vector (``obs["state"]``): all fields, privileged ones included."""
    s = np.asarray(state, dtype=np.float64)
    if s.shape != (len(STATE_NAMES),):
        raise ConfigError(
            f"a twin state has {len(STATE_NAMES)} values (sim.so101.env.STATE_NAMES), got shape {s.shape}"
        )
    return {
        "joint_pos_rad": s[_JOINTS],
        "gripper_open_frac": float(s[_INDEX["gripper_open_frac"]]),
        "ee_pos_m": s[_TCP],
        "object_pos_m": s[_CUBE],
        "object_half_size_m": geometry.CUBE_HALF_M,
        "goal_pos_m": s[_GOAL],
        "object_minus_ee_m": s[_CUBE_MINUS_TCP],
    }


def robot_view(obs: dict[str, np.ndarray]) -> dict[str, Any]:
    """The view a real arm gives (LeRobot joint keys: degrees, gripper 0..100): joints and gripper only."""
    missing = [k for k in JOINT_KEYS if k not in obs]
    if missing:
        raise ConfigError(
            f"robot observation lacks {missing}; expected the LeRobot joint keys {list(JOINT_KEYS)}"
        )
    joints = [math.radians(float(np.asarray(obs[k]).reshape(-1)[0])) for k in JOINT_KEYS[:5]]
    return {
        "joint_pos_rad": np.array(joints),
        "gripper_open_frac": float(np.asarray(obs[JOINT_KEYS[5]]).reshape(-1)[0]) / 100.0,
    }


# ---------------------------------------------------------------------------------- verification episodes
@dataclass
class Episode:
    """The views of one episode's states (reset state first) and whether the task succeeded."""

    views: list[dict[str, Any]]
    success: bool


def collect_episodes(
    sim: SimConfig, policy: Literal["expert", "random"], episodes: int, seed: int
) -> list[Episode]:
    """Run the twin's scripted expert or a uniform-random policy; state only, nothing rendered."""
    if sim.suite != "so101":
        raise ConfigError(
            f"reward programs are verified on the SO-101 twin (--sim.suite so101), not {sim.suite!r}"
        )
    env = make_env(dataclasses.replace(sim, cameras=()))
    rng = np.random.default_rng(seed)
    act: Callable[[dict[str, np.ndarray]], np.ndarray]
    expert = ScriptedPolicy(env) if policy == "expert" else None
    space = env.action_space
    assert isinstance(space, gym.spaces.Box)
    out = []
    try:
        for e in range(episodes):
            obs, info = env.reset(seed=seed * 1000 + e)
            if expert is not None:
                expert.reset()
                act = expert.act
            else:
                act = lambda _obs: rng.uniform(space.low, space.high).astype(np.float32)  # noqa: E731
            views, success = [twin_view(obs[STATE_KEY])], bool(info.get("success", False))
            while True:
                obs, _, terminated, truncated, info = env.step(act(obs))
                views.append(twin_view(obs[STATE_KEY]))
                success = success or bool(info["success"])
                if terminated or truncated:
                    break
            out.append(Episode(views, success))
    finally:
        env.close()
    return out


def evaluate_episodes(sandbox: Sandbox, episodes: Sequence[Episode]) -> list[list[list[SubtaskResult]]]:
    """Every episode's views through the loaded program (one sandbox request per episode)."""
    return [sandbox.evaluate(ep.views) for ep in episodes]


# ---------------------------------------------------------------------------------------- training reward
CaRMode = Literal["replace", "add"]


class CaRReward(gym.Wrapper):
    """Replaces (``replace``) or adds to (``add``) the env's reward ``weight`` x the dense CaR reward.

    The reward of a step is computed from the state it lands in. ``info`` gains ``car_stage`` (sub-tasks
    done in order) and ``car_reward``. A step on which the program raises, or the worker is stopped, gets
    CaR reward 0 and is counted in ``errors`` (the worker is replaced on the next step).
    """

    def __init__(
        self,
        env: gym.Env,
        program: RewardProgram,
        mode: CaRMode,
        weight: float,
        sandbox_cfg: SandboxConfig | None = None,
    ) -> None:
        super().__init__(env)
        self.program, self.mode, self.weight = program, mode, weight
        self.sandbox = Sandbox(sandbox_cfg)
        self.sandbox.load([s.source for s in program.subtasks])
        self.errors = 0
        self.last_error = ""
        self._episode_stage = 0
        self._episode_car = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._episode_stage, self._episode_car = 0, 0.0
        return self.env.reset(**kwargs)

    def episode_stats(self) -> dict[str, float]:
        """The episode so far: ``car/subtask_<k>`` 1.0 when sub-task k (1-based) was reached in order,
        ``car/return`` (sum of CaR rewards, unweighted) and ``car/errors`` (steps the program failed, whole run)."""
        stats = {
            f"car/subtask_{k}": float(self._episode_stage >= k)
            for k in range(1, len(self.program.subtasks) + 1)
        }
        return {**stats, "car/return": self._episode_car, "car/errors": float(self.errors)}

    def car(self, obs: dict[str, np.ndarray]) -> tuple[float, int]:
        """(dense reward, stage) of an observation."""
        try:
            row = self.sandbox.evaluate([twin_view(obs[STATE_KEY])])[0]
        except SandboxError as exc:
            self.errors += 1
            self.last_error = str(exc)
            return 0.0, 0
        failed = [r.error for r in row if r.error]
        if failed:
            self.errors += 1
            self.last_error = failed[0]
        return dense_reward(row)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        car, stage = self.car(obs)
        self._episode_stage = max(self._episode_stage, stage)
        self._episode_car += car
        info = {**info, "car_stage": float(stage), "car_reward": car}
        base = float(reward) if self.mode == "add" else 0.0
        return obs, base + self.weight * car, terminated, truncated, info

    def close(self) -> None:
        self.sandbox.close()
        super().close()


def check_program_target(program: RewardProgram, runs_on_robot: bool, where: str) -> None:
    """Refuse a privileged program where the reward would be computed on a real arm (sim shaping is fine)."""
    if runs_on_robot and program.privileged:
        extra = sorted(program.fields - ROBOT_FIELDS)
        raise ConfigError(
            f"{where}: the reward program reads simulation-only fields {extra}, which a real arm does not provide; "
            f"use one that reads only {sorted(ROBOT_FIELDS)}"
        )


# ------------------------------------------------------------------------------------------ the run report
def subtask_curve(train_log: Sequence[dict[str, float]], bins: int = 8) -> list[dict[str, float]]:
    """Share of training episodes that reached each sub-task, per window of env steps (``bins`` windows)."""
    logged = [t for t in train_log if "car/subtask_1" in t]
    if not logged:
        return []
    keys = sorted(
        (k for k in logged[0] if k.startswith("car/subtask_")), key=lambda k: int(k.rsplit("_", 1)[1])
    )
    rows = []
    for chunk in np.array_split(np.arange(len(logged)), min(bins, len(logged))):
        if len(chunk) == 0:
            continue
        window = [logged[i] for i in chunk]
        row = {"step": float(window[-1]["step"]), "episodes": float(len(window))}
        row |= {k.removeprefix("car/"): float(np.mean([t[k] for t in window])) for k in keys}
        rows.append(row)
    return rows


def report_section(train_log: Sequence[dict[str, float]], names: Sequence[str], run_dir: Any) -> list[str]:
    """Markdown lines (and ``car_subtasks.png``) with the sub-task completion curve; [] without a program."""
    rows = subtask_curve(train_log)
    if not rows:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for k, name in enumerate(names, 1):
        ax.plot(
            [r["step"] for r in rows], [r[f"subtask_{k}"] for r in rows], marker="o", label=f"{k}. {name}"
        )
    ax.set(title="training episodes reaching each sub-task", xlabel="env steps", ylim=(-0.05, 1.05))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "car_subtasks.png", dpi=100)
    plt.close(fig)
    header = " | ".join(f"{k}. {n}" for k, n in enumerate(names, 1))
    lines = [
        "## Code-as-Reward sub-task completion (training episodes)",
        "",
        "Share of training episodes in each window that reached each sub-task in order (`car_subtasks.png`).",
        "",
        f"| up to env step | episodes | {header} |",
        "|---" * (2 + len(names)) + "|",
    ]
    for r in rows:
        shares = " | ".join(f"{r[f'subtask_{k}']:.0%}" for k in range(1, len(names) + 1))
        lines.append(f"| {r['step']:.0f} | {r['episodes']:.0f} | {shares} |")
    errors = max((t.get("car/errors", 0.0) for t in train_log), default=0.0)
    lines += ["", f"Steps on which the program failed (CaR reward 0): {errors:.0f}.", ""]
    return lines


# ------------------------------------------------------------------------------------------ train wiring
REWARD_PROGRAM_FILE = "reward_program.json"
"""Run-directory copy of ``--reward-program``: a resume reads it, so an edited file cannot change the run."""


def wrap_with_program(
    env: gym.Env, path: Any, task: str, mode: str, weight: float, run_dir: Any, resuming: bool
) -> CaRReward:
    """``env`` with the CaR reward of the program file ``path`` (a resume reads the run directory's copy).

    Refuses programs that did not pass verification, or whose verification record does not match them
    (made by hand, edited since, or verified by another checker: issue #36), that were written for another
    task, a negative weight or an unknown mode (one-line ConfigError / VLMError). A resume reads the copy the
    run kept when it started."""
    from pathlib import Path

    if mode not in ("replace", "add"):
        raise ConfigError(f"reward_program_mode must be 'add' or 'replace', got {mode!r}")
    if weight < 0:
        raise ConfigError(f"reward_program_weight must be >= 0, got {weight}")
    copy = Path(run_dir) / REWARD_PROGRAM_FILE
    program = load_program(copy if resuming else path)
    verify_it = f"run `vlmrl reward-program verify --program {path}` and train with it once it passes"
    if program.status != "verified":
        raise ConfigError(f"{path}: the reward program is {program.status}; {verify_it}")
    if program.task != task:
        raise ConfigError(
            f"{path}: the reward program is for task {program.task!r}, this run trains {task!r}"
        )
    problem = "" if resuming else verification_problem(program)
    if problem:
        raise ConfigError(f"{path}: {problem}; {verify_it}")
    if not resuming:
        save_program(program, copy)
    return CaRReward(env, program, mode, weight)  # type: ignore[arg-type]


def report_lines(run_dir: Any, train_log: Sequence[dict[str, float]]) -> list[str]:
    """The run report's CaR section from the run directory's program copy ([] for runs without one)."""
    from pathlib import Path

    copy = Path(run_dir) / REWARD_PROGRAM_FILE
    if not copy.exists():
        return []
    try:
        program = load_program(copy)
    except ProgramFileError:
        return []
    author = "hand-written by a person" if program.author == "person" else "generated by a model"
    head = [
        f"Reward program: `{REWARD_PROGRAM_FILE}` (task {program.task}, {author}, {len(program.subtasks)} sub-tasks).",
        "",
    ]
    return head + report_section(train_log, [s.name for s in program.subtasks], Path(run_dir))

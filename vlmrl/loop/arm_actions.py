"""A policy's actions on an arm and back: the joint targets an arm is sent for an agent's action (`deploy`,
`evaluate --robot.unit`, `finetune`), and what the arm was really sent (after the safety layer, or an
operator's takeover) in the agent's units, which is what `finetune` stores and learns from.

- ``None`` (``--sim.action-mode absolute``): the policy outputs joint targets; they are sent and stored as they are.
- ``JointDeltas`` (``delta``): joint target changes in [-1, 1] scaled per joint.
- ``EndEffectorDeltas`` (``ee_delta``): tool-centre-point moves, wrist roll and gripper changes in [-1, 1],
  turned into joint targets with the twin's closed-form kinematics.

Both converters start every step from what was really sent (``LeRobotEnv.last_sent``), so a move the safety
layer clipped does not wind up and a takeover hands back to the policy where the arm is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.config import SimConfig, joint_delta_scale
from sim.so101.kinematics import EE_ACTION_NAMES, ee_delta_step, forward_kinematics
from vlmrl.errors import ConfigError


class JointDeltas:
    """A joint-delta policy's actions (``--sim.action-mode delta``) as an arm's joint targets:
    ``LeRobotEnv.delta_targets`` with the policy's per-joint scale (``max_delta_deg`` x5, ``max_delta_gripper``)."""

    def __init__(self, scale: Sequence[float]) -> None:
        self.scale = [float(x) for x in scale]

    def __call__(self, env: Any, action: np.ndarray) -> np.ndarray:
        return env.delta_targets(action, self.scale)

    def to_agent(self, keys: Sequence[str], sent: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """The change from the ``previous`` command to ``sent`` over the scale, clipped to [-1, 1] (a target
        that jumped further, as an operator's may, is stored as the largest step). ``keys`` unused."""
        change = (np.asarray(sent, np.float64) - np.asarray(previous, np.float64)) / np.asarray(
            self.scale, np.float64
        )
        return np.clip(change, -1.0, 1.0).astype(np.float32)


class EndEffectorDeltas:
    """An end-effector policy's actions (``--sim.action-mode ee_delta``: ``EE_ACTION_NAMES`` in [-1, 1]) as an
    arm's joint targets, as the twin turns them (``sim.so101.env``): the tool centre point the last command
    the safety layer let through puts the tool at (the twin's closed-form forward kinematics; right after a
    reset, the measured pose) moves by up to ``max_delta_m`` inside the twin's workspace box, and the
    closed-form IK (gripper pointing as steeply down as reachable) gives the first four joints; a point out of
    reach holds the arm's pose. Wrist roll and gripper move from the last command by ``max_delta_deg`` and
    ``max_delta_gripper``; every target stays within the safety layer's joint limits.

    Each step starts from what was really sent, not from a tool point of its own, so a move the safety layer
    clipped does not wind up (as ``LeRobotEnv.delta_targets``); where nothing is clipped this is the twin's
    own sequence of targets. The kinematics are the twin's model of an SO-101, so on a real arm the tool
    reaches where that model says, up to the arm's calibration error; the camera closes the loop."""

    def __init__(self, max_delta_m: float, max_delta_deg: float, max_delta_gripper: float) -> None:
        self.max_delta_m = float(max_delta_m)
        self.max_delta_deg = float(max_delta_deg)
        self.max_delta_gripper = float(max_delta_gripper)

    def __call__(self, env: Any, action: np.ndarray) -> np.ndarray:
        a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        if a.shape != (len(EE_ACTION_NAMES),):
            raise ConfigError(
                f"an ee_delta action has {len(EE_ACTION_NAMES)} values {EE_ACTION_NAMES}, got {a.shape}"
            )
        keys = list(env.action_keys)
        sent = dict(zip(keys, env.last_sent("ee_delta_targets").astype(np.float64).tolist(), strict=True))
        moved, _ = ee_delta_step(
            sent, forward_kinematics(sent), a, self.max_delta_m, self.max_delta_deg, self.max_delta_gripper
        )
        targets = np.array([moved[key] for key in keys], dtype=np.float64)
        limits = env.cfg.safety.joint_limits
        low = np.array([limits[k][0] for k in keys], dtype=np.float64)
        high = np.array([limits[k][1] for k in keys], dtype=np.float64)
        return np.clip(targets, low, high).astype(np.float32)

    def to_agent(self, keys: Sequence[str], sent: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """The move from the ``previous`` command to ``sent`` (joint targets in ``keys``' order) as an
        ee_delta action: the tool centre point's change by forward kinematics over ``max_delta_m``, wrist roll
        and gripper changes over their scales, clipped to [-1, 1]. The wrist's pitch is not part of the
        action: an operator's move that tilts the wrist is stored as the tool's move it makes."""
        keys = list(keys)
        now, before = np.asarray(sent, np.float64), np.asarray(previous, np.float64)
        tool_now = forward_kinematics(dict(zip(keys, now.tolist(), strict=True)))
        tool_before = forward_kinematics(dict(zip(keys, before.tolist(), strict=True)))
        roll, gripper = keys.index("wrist_roll.pos"), keys.index("gripper.pos")
        action = np.concatenate(
            [
                (tool_now - tool_before) / self.max_delta_m,
                [(now[roll] - before[roll]) / self.max_delta_deg],
                [(now[gripper] - before[gripper]) / self.max_delta_gripper],
            ]
        )
        return np.clip(action, -1.0, 1.0).astype(np.float32)


ActionConverter = JointDeltas | EndEffectorDeltas
"""Turns a policy's actions into an arm's absolute joint targets and back (None: the policy outputs them)."""


def action_converter(run: dict[str, Any]) -> ActionConverter | None:
    """The converter a policy's actions need on an arm, from its run info (``action_mode``, ``max_delta_deg``,
    ``max_delta_gripper``, ``max_delta_m``: a policy file's ``policy_run_info``); a scale the run info lacks (a
    policy exported before it was recorded) is the twin's default, which it trained with."""
    mode = run.get("action_mode", "absolute")
    default = SimConfig()
    deg = float(run.get("max_delta_deg", default.max_delta_deg))
    gripper = float(run.get("max_delta_gripper", default.max_delta_gripper))
    if mode == "delta":
        return JointDeltas(joint_delta_scale(deg, gripper))
    if mode == "ee_delta":
        return EndEffectorDeltas(float(run.get("max_delta_m", default.max_delta_m)), deg, gripper)
    return None


def sim_action_converter(sim: SimConfig) -> ActionConverter | None:
    """``action_converter`` of a sim run's config (``vlmrl train``'s ``--sim``)."""
    return action_converter(
        {
            "action_mode": sim.action_mode,
            "max_delta_deg": sim.max_delta_deg,
            "max_delta_gripper": sim.max_delta_gripper,
            "max_delta_m": sim.max_delta_m,
        }
    )


def policy_action_size(run: dict[str, Any], arm_actions: int) -> int:
    """How many values the policy must output to drive an arm taking ``arm_actions`` joint targets."""
    return len(EE_ACTION_NAMES) if run.get("action_mode") == "ee_delta" else arm_actions


def agent_action_names(convert: ActionConverter | None, arm_keys: Sequence[str]) -> list[str]:
    """The names of the agent's action values: the arm's joint keys (joint targets or their deltas), or
    ``EE_ACTION_NAMES`` for an end-effector policy (what a store's ``action_keys`` records)."""
    return list(EE_ACTION_NAMES) if isinstance(convert, EndEffectorDeltas) else list(arm_keys)


def arm_targets(env: Any, action: np.ndarray, convert: ActionConverter | None) -> np.ndarray:
    """The joint targets sent to the arm for an agent's ``action``: the action itself for a policy trained on
    joint targets (``convert`` None), else ``convert(env, action)``."""
    return action if convert is None else convert(env, action)


def agent_action(
    sent: np.ndarray, previous: np.ndarray | None, convert: ActionConverter | None, keys: Sequence[str] = ()
) -> np.ndarray:
    """What the arm was really ``sent`` (after the safety layer, or an operator's absolute targets) in the
    agent's units: the targets themselves, or the move from the ``previous`` command (``convert.to_agent``;
    ``keys``: the arm's action keys, in the targets' order), the inverse of ``arm_targets``."""
    if convert is None:
        return sent
    assert previous is not None, "a converted action needs the previous command"
    return convert.to_agent(keys, sent, previous)

"""The Env contract shared by every simulated and real environment, its spec types and a checker.

An env is a ``gymnasium.Env`` with a dict observation space:

- ``"state"``: float32[n], a flat proprioceptive/task state (units documented by the env);
- ``"pixels/<camera>"``: uint8[H, W, 3], row 0 at the top of the image;
- for arms that have them, LeRobot joint keys such as ``"shoulder_pan.pos"`` (float32[1], degrees for
  the arm joints and 0..100 for the gripper, as LeRobot's SO101Follower with ``use_degrees=True``);
- optionally ``"joint_targets"`` (``TARGETS_KEY``): the joint targets last commanded, same units.

``step`` returns ``info`` with ``success: bool`` and ``progress: float in [0, 1]`` (privileged task
progress; the oracle scorer reads it). ``env.unwrapped.task_description`` is one sentence describing the
task (used in VLM prompts). ``check_env`` asserts all of this, Stable-Baselines3 ``check_env`` style.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from robot.arms import SO101
from robot.errors import RobotError

JOINT_NAMES: tuple[str, ...] = SO101.motors
"""LeRobot's SO-100/SO-101 motor names, base to gripper (``robot.arms.SO101``; other arms: ``robot.arms``)."""

JOINT_KEYS: tuple[str, ...] = SO101.keys
"""Observation/action keys of the SO-101 joints in LeRobot's naming (``"shoulder_pan.pos"``, ...)."""

STATE_KEY = "state"
PIXELS_PREFIX = "pixels/"
TARGETS_KEY = "joint_targets"
"""Optional observation of arms (``--sim.observe-targets`` on the twin, ``--env.observe-targets`` on an arm): the
joint targets last commanded, float32[n] in action-key order and LeRobot units. Under actuation latency the
joints lag them: what the policy sees of its commands still in flight."""


def bound_windup(targets: np.ndarray, measured: np.ndarray, bound: float, arm: np.ndarray) -> np.ndarray:
    """Joint targets with each arm joint's (``arm`` True) kept within ``bound`` of its ``measured`` position:
    the anti-windup of joint-delta actions, the same on the twin (``SimConfig.max_windup_deg``) and on an arm
    (``LeRobotEnv.delta_targets``). The gripper's target is left alone (its closing force is the gap).
    ``bound`` 0: the targets unchanged. Keeps ``targets``' dtype."""
    if bound <= 0:
        return targets
    return np.where(arm, np.clip(targets, measured - bound, measured + bound), targets).astype(targets.dtype)


def pixel_key(camera: str) -> str:
    """Observation key of a camera's frames, e.g. ``pixel_key("front") == "pixels/front"``."""
    return f"{PIXELS_PREFIX}{camera}"


class ArraySpec(NamedTuple):
    """Shape and dtype of one observation array (per step, without a batch axis)."""

    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True, kw_only=True)
class EnvSpec:
    """What a learner, a buffer or a deploy loop needs to know about an env, read from its spaces."""

    obs: dict[str, ArraySpec]
    """Every observation key with its per-step shape and dtype."""
    action_shape: tuple[int, ...]
    """Shape of one action."""
    action_low: np.ndarray
    """float32 lower bound of the action space (env units)."""
    action_high: np.ndarray
    """float32 upper bound of the action space (env units)."""
    cameras: tuple[str, ...]
    """Camera names, in observation order (``pixels/<camera>`` keys)."""
    task_description: str
    """One sentence describing the task, for VLM prompts."""

    @property
    def state_dim(self) -> int:
        """Length of the ``state`` vector."""
        return int(self.obs[STATE_KEY].shape[0])

    def obs_spec(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """``{key: (shape, dtype)}``, the form ``buffer.make_buffer`` takes."""
        return {key: (spec.shape, spec.dtype) for key, spec in self.obs.items()}


@runtime_checkable
class Env(Protocol):
    """A gymnasium-style env with dict observations (see the module docstring for the keys).

    ``reset`` and ``step`` block until the observation is ready (a real robot waits for its cameras).
    Bad actions (wrong shape, NaN/inf) raise the implementing package's error type; in-range clipping of
    finite actions is allowed. ``info`` always carries ``success`` and ``progress``.
    """

    observation_space: Any
    action_space: Any

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode; the same seed gives the same initial observation."""
        ...

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply one action; returns ``(obs, reward, terminated, truncated, info)``."""
        ...

    def close(self) -> None:
        """Release renderers, sockets and devices."""
        ...


def state_and_pixel_spaces(state_dim: int, cameras: Sequence[str], image_size: int) -> dict[str, Any]:
    """The contract's observation spaces for a ``state`` vector plus square uint8 frames per camera.

    Returns a plain dict (key -> ``gymnasium.spaces.Box``) so an env can add its own keys (joints)
    before wrapping it in ``spaces.Dict``.
    """
    from gymnasium import spaces

    obs: dict[str, Any] = {STATE_KEY: spaces.Box(-np.inf, np.inf, shape=(state_dim,), dtype=np.float32)}
    for camera in cameras:
        obs[pixel_key(camera)] = spaces.Box(0, 255, shape=(image_size, image_size, 3), dtype=np.uint8)
    return obs


def env_spec(env: Any) -> EnvSpec:
    """Read an ``EnvSpec`` from an env's spaces (raises ``RobotError`` if they break the contract)."""
    import gymnasium.spaces as spaces

    obs_space = env.observation_space
    if not isinstance(obs_space, spaces.Dict):
        raise RobotError(f"env contract: observation_space must be a gymnasium Dict, got {type(obs_space)}")
    obs: dict[str, ArraySpec] = {}
    for key, space in obs_space.spaces.items():
        if not isinstance(space, spaces.Box):
            raise RobotError(f"env contract: observation {key!r} must be a Box space, got {type(space)}")
        obs[key] = ArraySpec(tuple(int(n) for n in space.shape), np.dtype(space.dtype))
    action_space = env.action_space
    if not isinstance(action_space, spaces.Box):
        raise RobotError(f"env contract: action_space must be a Box, got {type(action_space)}")
    cameras = tuple(key[len(PIXELS_PREFIX) :] for key in obs if key.startswith(PIXELS_PREFIX))
    description = getattr(env.unwrapped, "task_description", None)
    return EnvSpec(
        obs=obs,
        action_shape=tuple(int(n) for n in action_space.shape),
        action_low=np.asarray(action_space.low, dtype=np.float32),
        action_high=np.asarray(action_space.high, dtype=np.float32),
        cameras=cameras,
        task_description=description if isinstance(description, str) else "",
    )


def _fail(message: str) -> RobotError:
    return RobotError(f"env contract: {message}")


def _check_spec(spec: EnvSpec) -> None:
    if STATE_KEY not in spec.obs:
        raise _fail(f"observation has no {STATE_KEY!r} key (keys: {sorted(spec.obs)})")
    state = spec.obs[STATE_KEY]
    if state.dtype != np.float32 or len(state.shape) != 1 or state.shape[0] < 1:
        raise _fail(f"'state' must be float32[n] with n >= 1, got {state.dtype}{list(state.shape)}")
    for key, array in spec.obs.items():
        if key.startswith(PIXELS_PREFIX):
            shape = array.shape
            if array.dtype != np.uint8 or len(shape) != 3 or shape[2] != 3 or min(shape) < 1:
                raise _fail(f"{key!r} must be uint8[H, W, 3], got {array.dtype}{list(shape)}")
        elif key.endswith(".pos") and (array.dtype != np.float32 or array.shape != (1,)):
            raise _fail(f"joint key {key!r} must be float32[1], got {array.dtype}{list(array.shape)}")
    if len(spec.action_shape) != 1 or spec.action_shape[0] < 1:
        raise _fail(f"action space must be 1-D, got shape {spec.action_shape}")
    if not (np.all(np.isfinite(spec.action_low)) and np.all(np.isfinite(spec.action_high))):
        raise _fail("action space bounds must be finite")
    if np.any(spec.action_low >= spec.action_high):
        raise _fail("action space low must be below high in every dimension")
    if not spec.task_description.strip():
        raise _fail("env.unwrapped.task_description must be a non-empty sentence")


def _check_obs(obs: Any, spec: EnvSpec, where: str) -> None:
    if not isinstance(obs, dict):
        raise _fail(f"{where} returned {type(obs)} as observation, expected a dict")
    if set(obs) != set(spec.obs):
        raise _fail(f"{where} observation keys {sorted(obs)} differ from the space's {sorted(spec.obs)}")
    for key, array_spec in spec.obs.items():
        value = obs[key]
        if not isinstance(value, np.ndarray):
            raise _fail(f"{where} observation {key!r} is {type(value)}, expected a numpy array")
        if value.shape != array_spec.shape or value.dtype != array_spec.dtype:
            raise _fail(
                f"{where} observation {key!r} is {value.dtype}{list(value.shape)}, "
                f"space says {array_spec.dtype}{list(array_spec.shape)}"
            )
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise _fail(f"{where} observation {key!r} has NaN or inf")


def _check_info(info: Any, where: str) -> None:
    if not isinstance(info, dict):
        raise _fail(f"{where} returned {type(info)} as info, expected a dict")
    for key in ("success", "progress"):
        if key not in info:
            raise _fail(f"{where} info has no {key!r} key (keys: {sorted(info)})")
    if not isinstance(info["success"], bool | np.bool_):
        raise _fail(f"{where} info['success'] must be a bool, got {type(info['success'])}")
    progress = info["progress"]
    if not isinstance(progress, float | np.floating) or not 0.0 <= float(progress) <= 1.0:
        raise _fail(f"{where} info['progress'] must be a float in [0, 1], got {progress!r}")


def _check_step(result: Any, spec: EnvSpec, where: str) -> tuple[dict[str, np.ndarray], bool]:
    if not isinstance(result, tuple) or len(result) != 5:
        raise _fail(f"{where} must return (obs, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = result
    _check_obs(obs, spec, where)
    if not isinstance(reward, float | int | np.floating) or not np.isfinite(reward):
        raise _fail(f"{where} reward must be a finite float, got {reward!r}")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, bool | np.bool_):
            raise _fail(f"{where} {name} must be a bool, got {type(flag)}")
    _check_info(info, where)
    # Rewards and task status are part of what must repeat for the same seed and actions.
    record = dict(obs)
    record["<reward>"] = np.array(float(reward))
    record["<success>"] = np.array(bool(info["success"]))
    record["<progress>"] = np.array(float(info["progress"]))
    return record, bool(terminated or truncated)


def _check_bounds(env: Any, obs: dict[str, np.ndarray], where: str) -> None:
    for key, space in env.observation_space.spaces.items():
        if key.startswith(PIXELS_PREFIX):
            continue
        value = obs[key]
        if np.any(value < space.low) or np.any(value > space.high):
            raise _fail(f"{where} observation {key!r} = {value.tolist()} is outside its space's bounds")


def _rollout(env: Any, spec: EnvSpec, seed: int, actions: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    obs, info = env.reset(seed=seed)
    _check_obs(obs, spec, "reset()")
    _check_bounds(env, obs, "reset()")
    _check_info(info, "reset()")
    trajectory = [obs]
    for i, action in enumerate(actions):
        record, done = _check_step(env.step(action), spec, f"step() #{i}")
        _check_bounds(env, record, f"step() #{i}")
        trajectory.append(record)
        if done:
            break
    return trajectory


def _assert_same(a: list[dict[str, np.ndarray]], b: list[dict[str, np.ndarray]]) -> None:
    if len(a) != len(b):
        raise _fail("same seed and actions gave episodes of different lengths (not deterministic)")
    for t, (obs_a, obs_b) in enumerate(zip(a, b)):
        for key in obs_a:
            if not np.array_equal(obs_a[key], obs_b[key]):
                raise _fail(f"same seed and actions gave a different {key!r} at step {t} (not deterministic)")


def _check_bad_actions(env: Any, spec: EnvSpec) -> None:
    env.reset(seed=0)
    bad = {
        "a NaN action": np.full(spec.action_shape, np.nan, dtype=np.float32),
        "an action of the wrong shape": np.zeros((spec.action_shape[0] + 1,), dtype=np.float32),
    }
    for what, action in bad.items():
        try:
            env.step(action)
        except RobotError:
            raise
        except Exception as error:  # the env's own error type: any clear refusal is fine
            if not str(error).strip():
                raise _fail(f"step() refused {what} with an empty error message") from error
            continue
        raise _fail(f"step() accepted {what} instead of raising an error")


def check_env(env: Any, n_steps: int = 20, seed: int = 0, check_determinism: bool = True) -> EnvSpec:
    """Check that ``env`` keeps the Env contract; raise ``RobotError`` naming the first violation.

    Checks the spaces (dict observation with float32 ``state``, uint8 HxWx3 ``pixels/<cam>``, float32[1]
    joint keys, bounded 1-D float32 Box actions), that reset/step return what the spaces say (values
    within the non-pixel spaces' bounds), ``info`` with ``success: bool`` and ``progress in [0, 1]``,
    determinism (same seed and actions -> identical observations, pixels included, rewards and task
    status), and that NaN or wrongly shaped actions are refused with an error.

    Args:
        env: the environment (gymnasium.Env or anything with the same methods).
        n_steps: random steps per rollout (keep small for slow envs).
        seed: reset seed for the rollouts; actions come from a generator seeded with it too.
        check_determinism: run the rollout twice and compare every observation.

    Returns:
        The env's ``EnvSpec``.
    """
    spec = env_spec(env)
    _check_spec(spec)
    if not np.dtype(env.action_space.dtype) == np.float32:
        raise _fail(f"action space dtype must be float32, got {env.action_space.dtype}")
    rng = np.random.default_rng(seed)
    actions = [
        rng.uniform(spec.action_low, spec.action_high).astype(np.float32) for _ in range(max(n_steps, 1))
    ]
    first = _rollout(env, spec, seed, actions)
    if check_determinism:
        _assert_same(first, _rollout(env, spec, seed, actions))
    _check_bad_actions(env, spec)
    return spec

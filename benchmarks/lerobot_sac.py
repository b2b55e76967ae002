"""LeRobot's own SAC vs ours on the SO-101 twin: robot observations, the same tasks, demonstrations and budget.

Ours: ``vlmrl train --recipe deployable`` (vlmrl/online/recipes.py), built by ``ours_args`` (the one place to
change it).
LeRobot's: ``lerobot.policies.sac`` 0.4.4 (``SACConfig`` defaults, ``SACPolicy`` with its default image
encoder and no pretrained weights, its own losses through ``policy.forward(batch, model=...)``), its replay
buffer (``lerobot.rl.buffer.ReplayBuffer`` with its DrQ shift) and its learner's optimizers
(``lerobot.rl.learner.make_optimizers_and_scheduler``), driven on the twin by ``LeRobotLearner`` below.
Both learners run on the same env (``TrainConfig.sim`` parsed from ``ours_args``), read the same robot
observations (the LeRobot joint keys ``shoulder_pan.pos`` ... ``gripper.pos`` and the ``pixels/front``
frame, nothing privileged; our asymmetric critic also reads the sim state, as the recipe says), get the
same scripted demonstrations (``sim.so101.scripted.ScriptedPolicy`` on the same episode seeds; LeRobot's
go to its offline buffer, which its learner samples for half of each batch, as our 50% prior share does)
and the same env-step budget, and are evaluated alike: ``vlmrl.evaluation.episodes.evaluate`` on the evaluation-only
seeds, the deterministic policy (LeRobot's: the tanh of its Gaussian's mean, the distribution's mode),
after the episode in which the step count crosses each multiple of ``--eval-every``, and at the end.

How LeRobot's learner is followed (``lerobot/rl/learner.py``, ``add_actor_information_and_train``): per
optimisation step, ``utd_ratio - 1`` critic-only updates, then a critic update, then, every
``policy_update_freq`` steps, ``policy_update_freq`` actor and temperature updates, each loss from
``policy.forward(batch, model="critic" | "actor" | "temperature")``, gradients clipped to
``grad_clip_norm``, ``policy.update_target_networks()`` after each critic update; batches of
``batch_size / 2`` online plus ``batch_size / 2`` offline transitions (``concatenate_batch_transitions``)
when there are demonstrations; updates start when the online buffer holds ``online_step_before_learning``
transitions; the policy acts in ``eval()`` mode (LeRobot's actor process) and learns in ``train()``
mode. That loop lives inside a gRPC learner server and cannot be called on its own, so the harness runs
the same calls in the same order, one optimisation step per env step (LeRobot's actor and learner run
asynchronously: there the ratio of updates to env steps depends on their speeds; here it is fixed, as in
ours, so both learners get the same number of updates per env step and the acting policy is never stale).

Changes to LeRobot (``LEROBOT_CHANGES``, also written to the JSON): none to its SAC, buffer or losses;
two to how it is imported, both at runtime in this process, site-packages untouched:

1. ``lerobot.policies``'s package ``__init__`` is bypassed (a bare package module whose ``__path__`` is
   its folder): it imports every policy, and groot needs ``diffusers`` (then fails under transformers 5).
2. ``lerobot.policies.factory`` is replaced by an empty module before ``lerobot.rl.learner`` is imported
   (for ``make_optimizers_and_scheduler`` and ``get_observation_features``): the factory imports every
   policy's config, groot's included. The harness builds ``SACPolicy(config)`` itself, as ``make_policy``
   does for a policy made from scratch (features set on the config, moved to the config's device).

Settings the harness chooses (``LEROBOT_SETTINGS``): the config's features (``observation.state`` = the 6
joints, ``observation.images.front`` = the 64 px frame as 3x64x64 in [0, 1], ``action`` = the twin's action in [-1, 1]: 6 joint deltas on reach, 5 end-effector values on lift, as the
recipe sets; the tanh policy's range), converted by LeRobot's own
``VanillaObservationProcessorStep`` as its gym path does (no normalisation: LeRobot's RL actor and learner
apply none); batch size 128 (ours); buffer capacities that hold the whole run; ``device="cpu"``; one torch
thread per process. Everything else is ``SACConfig``'s default (discount 0.99, temperature 1.0, 2 critics
of 256x256, latent 256, a frozen random conv encoder with learned spatial embeddings, torch.compile on).

Seen while building it (2026-12-03, AMD EPYC, two cores shared with other training runs): one LeRobot update
at batch 128 took 0.3-0.6 s on one thread (ours on robot observations at batch 256: 15-22 ms, the README's
pixel_cost), because ``get_observation_features`` caches image features only for a named pretrained encoder:
the default frozen conv encoder runs in every forward pass (six per update); the first update compiles for
45-90 s. LeRobot's target critics share the online encoder, so ``update_target_networks`` averages the
frozen encoder with itself (it moves by rounding only). With ``optimize_memory=True`` its buffer takes an
episode's last next-observation from the following episode's first.

JSON keys: ``tasks`` (per task: ``ours_success`` and ``lerobot_success``, the mean final success over
seeds; ``ours_wall_s`` and ``lerobot_wall_s``, the median seconds a run took from its process's launch;
``ours_wall_s_to_final_lerobot``, the median over seeds of the seconds to our first evaluation at or above
LeRobot's final success on the same seed, null when one of ours never got there or no seed has both runs;
``curves`` per learner and seed: step, seconds since launch, success, return; only runs that exited
cleanly count), ``lerobot_changes``, ``lerobot_settings``, ``cpu_model``, ``git_commit`` and ``details``.
``--merge A.json B.json --json OUT`` runs nothing: it pools runs of other seeds (made one session at a time,
say) into one JSON, the figures recomputed over all of them, each input's commit, CPU, seeds and load under
``sources`` (``git_commit`` and ``cpu_model`` become lists when the inputs differ).

    PYTHONPATH=$PWD MUJOCO_GL=egl nice -n 10 .venv/bin/python benchmarks/lerobot_sac.py --quick --json out.json
    .venv/bin/python benchmarks/lerobot_sac.py --tasks reach --seeds 1 2 --json s12.json   # later, then:
    .venv/bin/python benchmarks/lerobot_sac.py --merge s0.json s12.json --json results/bench/lerobot_sac.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

TASKS = ("reach", "lift")
EVAL_EVERY = {"reach": 1000, "lift": 2500}
"""Steps between evaluations, the deployable recipe's (both learners are evaluated on this schedule)."""
DEFAULT_STEPS = {"reach": 10_000, "lift": 30_000}
"""The deployable recipe's budgets in env steps."""
QUICK_STEPS = 1000
"""``--quick``'s budget: LeRobot's update costs ~0.3-0.6 s on one shared core (its frozen encoder runs in
every forward pass), so 1,000 steps take it several minutes; ours starts updating at step 1,000."""
BATCH_SIZE = 128
"""Transitions per update for both learners (ours' default; LeRobot's learner default of 8 is a stub)."""
CAMERA = "front"

LEROBOT_CHANGES = [
    "lerobot.policies package __init__ bypassed (a bare package module with the folder as __path__, in "
    "sys.modules first): it imports every policy and groot needs diffusers, then fails under transformers 5",
    "lerobot.policies.factory replaced by an empty module before importing lerobot.rl.learner (for "
    "make_optimizers_and_scheduler and get_observation_features): it imports every policy config; the harness "
    "builds SACPolicy(config) itself as make_policy does for a policy made from scratch",
]
LEROBOT_SETTINGS = {
    "config": "SACConfig defaults except input/output features, device=cpu and the buffer capacities",
    "observation": "observation.state = the 6 joint keys in LeRobot's order (degrees, gripper 0-100), "
    "observation.images.front = the 64 px frame, 3x64x64 float in [0, 1], through LeRobot's "
    "VanillaObservationProcessorStep; no normalisation (LeRobot's RL loop applies none)",
    "action": "the recipe's action in [-1, 1] (6 joint deltas on reach, 5 end-effector values on lift): the twin's "
    "action space and the range of LeRobot's tanh policy",
    "batch_size": f"{BATCH_SIZE}, as ours; halved between online and offline buffers with demonstrations "
    "(LeRobot's learner), as ours' prior share of 0.5",
    "buffers": "lerobot.rl.buffer.ReplayBuffer with optimize_memory=True and its DrQ shift, as learner.py builds them",
    "schedule": "one optimisation step (LeRobot's learner loop body) per env step, synchronous with acting",
    "acting": "policy.select_action in eval() mode (a sample, as LeRobot's actor), updates in train() mode",
    "evaluation": "vlmrl.evaluation.episodes.evaluate, deterministic: tanh of the actor's mean",
    "torch_compile": "on (SACConfig default; also the buffer's DrQ shift): its first update compiles for "
    "one to two minutes on these cores, counted in lerobot_wall_s",
}


# -------------------------------------------------------------------------------------------- ours
def ours_args(task: str, seed: int, steps: int, run_dir: str) -> list[str]:
    """`vlmrl train` arguments of our learner on ``task``: the deployable recipe (``--recipe deployable``,
    vlmrl/online/recipes.py) with this budget. The one place to change them; the LeRobot side reads its env,
    demonstrations and budget from the same arguments (``train_config``)."""
    if task not in TASKS:
        raise ValueError(f"task {task!r}: expected one of {TASKS}")
    return [
        "--recipe", "deployable", "--sim.task", task, "--total-steps", str(steps), "--seed", str(seed),
        "--run-dir", run_dir, "--video-episodes", "0", "--no-progress",
    ]  # fmt: skip


def train_config(args: list[str]) -> Any:
    """The ``TrainConfig`` that `vlmrl train` parses from ``args`` (a recipe resolved as the CLI does)."""
    import tyro

    from vlmrl.pipelines.train import Config, cli_default

    return tyro.cli(Config, args=args, default=cli_default(args))


def eval_args(eval_every: int, eval_episodes: int) -> list[str]:
    """What both learners share beyond the recipe: the evaluation schedule, one torch thread."""
    return [
        "--eval-every-steps", str(eval_every), "--eval-episodes", str(eval_episodes), "--torch-threads", "1",
    ]  # fmt: skip


def ours_command(run: dict[str, Any]) -> list[str]:
    return [
        sys.executable, "-m", "vlmrl", "train",
        *ours_args(run["task"], run["seed"], run["steps"], run["dir"]),
        *eval_args(run["eval_every"], run["eval_episodes"]),
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------ LeRobot
def import_lerobot() -> types.SimpleNamespace:
    """LeRobot's SAC, buffer, observation step and learner helpers, imported with ``LEROBOT_CHANGES``."""
    import importlib.util

    spec = importlib.util.find_spec("lerobot")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("lerobot is not installed (pip install --no-deps lerobot==0.4.4; ARCHITECTURE.md)")
    root = Path(next(iter(spec.submodule_search_locations)))
    if "lerobot.policies" not in sys.modules:  # change 1: skip the package __init__
        policies = types.ModuleType("lerobot.policies")
        policies.__path__ = [str(root / "policies")]
        sys.modules["lerobot.policies"] = policies
    if "lerobot.policies.factory" not in sys.modules:  # change 2: no factory (learner.py imports make_policy)
        factory = types.ModuleType("lerobot.policies.factory")
        factory.make_policy = None  # type: ignore[attr-defined]
        sys.modules["lerobot.policies.factory"] = factory
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.sac.configuration_sac import SACConfig
    from lerobot.policies.sac.modeling_sac import SACPolicy
    from lerobot.processor.observation_processor import VanillaObservationProcessorStep
    from lerobot.rl import learner
    from lerobot.rl.buffer import ReplayBuffer, concatenate_batch_transitions
    from lerobot.utils.constants import ACTION, OBS_IMAGES, OBS_STATE

    return types.SimpleNamespace(
        SACConfig=SACConfig, SACPolicy=SACPolicy, ReplayBuffer=ReplayBuffer,
        concatenate_batch_transitions=concatenate_batch_transitions, learner=learner,
        VanillaObservationProcessorStep=VanillaObservationProcessorStep, FeatureType=FeatureType,
        PolicyFeature=PolicyFeature, ACTION=ACTION, OBS_IMAGES=OBS_IMAGES, OBS_STATE=OBS_STATE,
    )  # fmt: skip


def lerobot_config(
    lr: types.SimpleNamespace,
    image_px: int,
    action_dim: int,
    online_capacity: int,
    offline_capacity: int,
    **overrides: Any,
) -> Any:
    """``SACConfig`` defaults with the twin's robot observations and actions as its features."""
    from robot.contract import JOINT_KEYS

    cfg = lr.SACConfig(
        device="cpu", storage_device="cpu", online_buffer_capacity=online_capacity,
        offline_buffer_capacity=offline_capacity, **overrides,
    )  # fmt: skip
    cfg.input_features = {
        lr.OBS_STATE: lr.PolicyFeature(type=lr.FeatureType.STATE, shape=(len(JOINT_KEYS),)),
        f"{lr.OBS_IMAGES}.{CAMERA}": lr.PolicyFeature(
            type=lr.FeatureType.VISUAL, shape=(3, image_px, image_px)
        ),
    }
    cfg.output_features = {lr.ACTION: lr.PolicyFeature(type=lr.FeatureType.ACTION, shape=(action_dim,))}
    return cfg


class ObservationMap:
    """Our robot observation (joint keys of shape (1,), ``pixels/front`` uint8 HxWx3) as LeRobot's gym path
    gives it to its policy: ``agent_pos`` and ``pixels`` through ``VanillaObservationProcessorStep``."""

    def __init__(self, lr: types.SimpleNamespace) -> None:
        from robot.contract import JOINT_KEYS

        self.joint_keys = JOINT_KEYS
        self.step = lr.VanillaObservationProcessorStep()

    def __call__(self, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        joints = np.concatenate([np.asarray(obs[k], np.float32).reshape(-1) for k in self.joint_keys])
        frame = np.ascontiguousarray(obs[f"pixels/{CAMERA}"])
        return self.step.observation({"agent_pos": joints, "pixels": {CAMERA: frame}})


@dataclass
class UpdateStats:
    updates: int = 0
    update_s: float = 0.0
    last: dict[str, float] | None = None


class LeRobotLearner:
    """LeRobot's ``SACPolicy`` with its buffers and optimizers, updated as its learner does (module docstring).

    Args:
        config: the ``SACConfig`` (features set: ``lerobot_config``).
        lr: ``import_lerobot()``.
        batch_size: transitions per update (halved between the buffers once ``offline`` holds data).
        seed: torch's seed for the networks, sampling and DrQ shifts.
    """

    def __init__(self, config: Any, lr: types.SimpleNamespace, batch_size: int, seed: int) -> None:
        import torch

        torch.manual_seed(seed)
        self.lr, self.config, self.batch_size = lr, config, batch_size
        self.policy = lr.SACPolicy(config).to(config.device)  # as make_policy does
        self.policy.train()
        self.optimizers, _ = lr.learner.make_optimizers_and_scheduler(
            types.SimpleNamespace(policy=config), self.policy
        )
        keys = list(config.input_features)

        def buffer(capacity: int) -> Any:  # as learner.py's initialize_replay_buffer
            return lr.ReplayBuffer(
                capacity=capacity, device=config.device, state_keys=keys,
                storage_device=config.storage_device, optimize_memory=True,
            )  # fmt: skip

        self.online = buffer(config.online_buffer_capacity)
        self.offline = buffer(config.offline_buffer_capacity)
        self.optimization_step = 0
        self.stats = UpdateStats()

    # --------------------------------------------------------------------------------- data
    def add(
        self,
        buffer: Any,
        obs: dict,
        action: np.ndarray,
        reward: float,
        next_obs: dict,
        terminated: bool,
        truncated: bool,
    ) -> None:
        """One transition (observations as ``ObservationMap`` gives them) into ``self.online`` or ``self.offline``."""
        import torch

        buffer.add(
            state=obs, action=torch.as_tensor(np.asarray(action, np.float32)).unsqueeze(0),
            reward=float(reward), next_state=next_obs, done=bool(terminated), truncated=bool(truncated),
        )  # fmt: skip

    def ready(self) -> bool:
        """Whether the learner would update: the online buffer holds ``online_step_before_learning`` transitions."""
        return len(self.online) >= self.config.online_step_before_learning

    # ------------------------------------------------------------------------------- acting
    def act(self, obs: dict[str, Any], deterministic: bool) -> np.ndarray:
        """An action for one observation: ``select_action`` (a sample) or the mode, tanh of the mean."""
        import torch

        self.policy.eval()
        with torch.no_grad():
            if deterministic:
                _, _, means = self.policy.actor(obs)
                action = torch.tanh(means)
            else:
                action = self.policy.select_action(obs)
        self.policy.train()
        return action.squeeze(0).cpu().numpy().astype(np.float32)

    # ------------------------------------------------------------------------------- update
    def sample(self) -> dict[str, Any]:
        lr = self.lr
        if len(self.offline) == 0:
            return self.online.sample(self.batch_size)
        half = self.batch_size // 2
        return lr.concatenate_batch_transitions(self.online.sample(half), self.offline.sample(half))

    def forward_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        obs_features, next_obs_features = self.lr.learner.get_observation_features(
            policy=self.policy, observations=batch["state"], next_observations=batch["next_state"]
        )
        return {
            self.lr.ACTION: batch[self.lr.ACTION], "reward": batch["reward"], "state": batch["state"],
            "next_state": batch["next_state"], "done": batch["done"],
            "observation_feature": obs_features, "next_observation_feature": next_obs_features,
        }  # fmt: skip

    def step(self, name: str, loss: Any, parameters: Any) -> float:
        import torch

        optimizer = self.optimizers[name]
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(parameters=parameters, max_norm=self.config.grad_clip_norm)
        optimizer.step()
        return float(norm)

    def critic_step(self, forward_batch: dict[str, Any]) -> float:
        loss = self.policy.forward(forward_batch, model="critic")["loss_critic"]
        self.step("critic", loss, self.policy.critic_ensemble.parameters())
        return float(loss.item())

    def update(self) -> dict[str, float]:
        """One optimisation step of LeRobot's learner loop; returns its losses and temperature."""
        policy, cfg = self.policy, self.config
        start = time.perf_counter()
        for _ in range(cfg.utd_ratio - 1):
            self.critic_step(self.forward_batch(self.sample()))
            policy.update_target_networks()
        forward_batch = self.forward_batch(self.sample())
        info = {"loss_critic": self.critic_step(forward_batch)}
        if self.optimization_step % cfg.policy_update_freq == 0:
            for _ in range(cfg.policy_update_freq):
                loss_actor = policy.forward(forward_batch, model="actor")["loss_actor"]
                self.step("actor", loss_actor, policy.actor.parameters())
                loss_temperature = policy.forward(forward_batch, model="temperature")["loss_temperature"]
                self.step("temperature", loss_temperature, [policy.log_alpha])
                info |= {
                    "loss_actor": float(loss_actor.item()),
                    "loss_temperature": float(loss_temperature.item()),
                    "temperature": float(policy.temperature),
                }
        policy.update_target_networks()
        self.optimization_step += 1
        self.stats.updates += 1
        self.stats.update_s += time.perf_counter() - start
        self.stats.last = info
        return info


def lerobot_worker(run: dict[str, Any]) -> None:
    """One LeRobot SAC run (this file re-invoked with ``--lerobot-worker``): its curve goes to ``run["out"]``."""
    import torch

    from sim import make_env
    from sim.so101.scripted import ScriptedPolicy
    from vlmrl.evaluation.episodes import eval_seeds, evaluate
    from vlmrl.online.trainer import DEMO_SEED_OFFSET, TRAIN_SEED_STRIDE

    torch.set_num_threads(1)
    cfg = train_config(ours_args(run["task"], run["seed"], run["steps"], run["dir"]))
    lr = import_lerobot()
    env, eval_env = make_env(cfg.sim), make_env(cfg.sim)
    obs_map = ObservationMap(lr)
    # The same demonstrations as ours: the same expert on the same episode seeds (vlmrl.online.trainer).
    expert, demos = ScriptedPolicy(env), []
    for d in range(cfg.demo_episodes):
        expert.reset()
        demos += episode(env, obs_map, expert.act, cfg.seed * TRAIN_SEED_STRIDE + DEMO_SEED_OFFSET + d)
    capacity = cfg.total_steps + 1  # holds the whole run: nothing is evicted, as in ours
    config = lerobot_config(lr, cfg.sim.image_size, env.action_space.shape[0], capacity, len(demos) + 1)
    agent = LeRobotLearner(config, lr, BATCH_SIZE, cfg.seed)
    for transition in demos:
        agent.add(agent.offline, *transition)
    curve: list[dict[str, float]] = []
    step, next_eval, e = 0, run["eval_every"], 0

    def evaluation() -> None:
        result = evaluate(
            eval_env,
            lambda obs: agent.act(obs_map(obs), deterministic=True),
            eval_seeds(cfg.seed, run["eval_episodes"]),
        )
        curve.append({"step": float(step), "wall_s": time.time() - run["launch"],
                      "success": result.success_rate, "return": result.mean_return})  # fmt: skip
        stats = {
            "updates": agent.stats.updates,
            "update_s": agent.stats.update_s,
            "last_update": agent.stats.last,
        }
        Path(run["out"]).write_text(json.dumps({"curve": curve, **stats}))
        print(f"lerobot {run['task']} seed {cfg.seed}: {curve[-1]} {stats}", flush=True)

    def on_step(transition: tuple) -> None:
        nonlocal step
        agent.add(agent.online, *transition)
        step += 1
        if agent.ready():
            agent.update()

    while step < cfg.total_steps:  # whole episodes, as ours: the last one may run over the budget
        policy = lambda _obs, mapped: agent.act(mapped, deterministic=False)  # noqa: E731
        episode(env, obs_map, policy, cfg.seed * TRAIN_SEED_STRIDE + e, on_step, mapped_policy=True)
        e += 1
        if step >= next_eval:
            next_eval += run["eval_every"] * (1 + (step - next_eval) // run["eval_every"])
            evaluation()
    if not curve or curve[-1]["step"] != step:
        evaluation()
    env.close()
    eval_env.close()


def episode(
    env: Any,
    obs_map: ObservationMap,
    policy: Any,
    seed: int,
    on_step: Any = None,
    mapped_policy: bool = False,
) -> list[tuple]:
    """One episode reset with ``seed``; each transition (LeRobot observations, action, reward, next
    observations, terminated, truncated) goes to ``on_step`` if given, else into the returned list.
    ``policy(obs)`` reads our observation, or with ``mapped_policy`` ``policy(obs, mapped)``."""
    obs, _ = env.reset(seed=seed)
    mapped, transitions = obs_map(obs), []
    while True:
        action = policy(obs, mapped) if mapped_policy else policy(obs)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        next_mapped = obs_map(next_obs)
        transition = (mapped, action, reward, next_mapped, terminated, truncated)
        if on_step is not None:
            on_step(transition)
        else:
            transitions.append(transition)
        if terminated or truncated:
            return transitions
        obs, mapped = next_obs, next_mapped


def lerobot_command(run: dict[str, Any]) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--lerobot-worker", json.dumps(run)]


# ------------------------------------------------------------------------------------------ summary
def summarize(task_runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one task from its finished runs (module docstring)."""
    from pixel_learning import first_wall_at

    def of(learner: str) -> list[dict[str, Any]]:  # a failed run's partial curve counts for nothing
        done = (r for r in task_runs if r["learner"] == learner and r.get("returncode") == 0)
        return sorted(done, key=lambda r: r["seed"])

    def final(learner: str) -> float | None:
        finals = [r["curve"][-1]["success"] for r in of(learner) if r["curve"]]
        return float(np.mean(finals)) if finals else None

    def wall(learner: str) -> float | None:
        walls = [r["end_s"] for r in of(learner) if r.get("end_s") is not None]
        return float(statistics.median(walls)) if walls else None

    lerobot_final = {r["seed"]: r["curve"][-1]["success"] for r in of("lerobot") if r["curve"]}
    to_final = [
        first_wall_at(r["curve"], lerobot_final[r["seed"]]) for r in of("ours") if r["seed"] in lerobot_final
    ]
    return {
        "ours_success": final("ours"),
        "lerobot_success": final("lerobot"),
        "ours_wall_s": wall("ours"),
        "lerobot_wall_s": wall("lerobot"),
        "ours_wall_s_to_final_lerobot": None
        if not to_final or None in to_final
        else float(statistics.median(w for w in to_final if w is not None)),
        "curves": {
            learner: {str(r["seed"]): r["curve"] for r in of(learner)} for learner in ("ours", "lerobot")
        },
        "runs": [
            {k: r.get(k) for k in ("learner", "seed", "steps", "returncode", "end_s", "updates", "update_s")}
            for r in task_runs
        ],
    }


def collect_curves(runs: list[dict[str, Any]]) -> None:
    from pixel_learning import ours_curve

    for run in runs:
        if run["learner"] == "ours":
            run["curve"] = ours_curve(run["dir"], run["launch"]) if Path(run["dir"], "tb").exists() else []
            continue
        out = Path(run["out"])
        data = json.loads(out.read_text()) if out.exists() else {}
        run["curve"] = data.get("curve", [])
        run["updates"], run["update_s"] = data.get("updates"), data.get("update_s")


def merge(paths: list[Path]) -> dict[str, Any]:
    """One JSON from several runs of this benchmark on other seeds (``--merge``): each task's figures are
    recomputed over every run of the inputs, whose commit, CPU, seeds and load are kept under ``sources`` (an input
    that is itself a merge brings its own ``sources``, so results grow a seed at a time).

    Raises:
        ValueError: an input that is not this benchmark's JSON, or one (task, learner, seed) in two inputs.
    """
    runs: dict[tuple[str, str, int], dict[str, Any]] = {}
    sources, first = [], None
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
            tasks = data["tasks"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"--merge {path}: not a lerobot_sac.py JSON ({exc})") from exc
        first = first or data
        for task, figures in tasks.items():
            for r in figures.get("runs", []):
                key = (task, r["learner"], int(r["seed"]))
                if key in runs:
                    raise ValueError(
                        f"--merge {path}: {task} {r['learner']} seed {r['seed']} is in two inputs"
                    )
                curve = figures.get("curves", {}).get(r["learner"], {}).get(str(r["seed"]), [])
                runs[key] = {**r, "task": task, "curve": curve}
        details = data.get("details", {})
        if "sources" in data:  # an earlier merge: its own inputs, as it listed them
            sources.extend(data["sources"])
            continue
        sources.append({
            "file": Path(path).name, "git_commit": data.get("git_commit"), "cpu_model": data.get("cpu_model"),
            "seeds": details.get("seeds"), "jobs": details.get("jobs"),
            "load_average_at_start": details.get("load_average_at_start"),
        })  # fmt: skip
    assert first is not None
    tasks = sorted({task for task, _, _ in runs}, key=lambda t: TASKS.index(t) if t in TASKS else len(TASKS))
    result: dict[str, Any] = {
        "tasks": {t: summarize([r for (task, _, _), r in sorted(runs.items()) if task == t]) for t in tasks}
    }
    commits = {s["git_commit"] for s in sources}
    cpus = {s["cpu_model"] for s in sources}
    return result | {
        "lerobot_changes": first.get("lerobot_changes"),
        "lerobot_settings": first.get("lerobot_settings"),
        "cpu_model": cpus.pop() if len(cpus) == 1 else sorted(map(str, cpus)),
        "git_commit": commits.pop() if len(commits) == 1 else sorted(map(str, commits)),
        "details": first.get("details", {}) | {"seeds": sorted({seed for _, _, seed in runs})},
        "sources": sources,
    }


def print_figures(result: dict[str, Any]) -> None:
    for task, figures in result["tasks"].items():
        print(
            f"{task}: success ours {figures['ours_success']}, lerobot {figures['lerobot_success']}; wall s ours "
            f"{figures['ours_wall_s']}, lerobot {figures['lerobot_wall_s']}; ours to LeRobot's final success "
            f"{figures['ours_wall_s_to_final_lerobot']} s",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run of a few minutes: reach, seed 0, 1,000 steps, evaluations of 10 episodes every 500",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument(
        "--tasks", default=None, help="comma-separated, of reach,lift (default both; quick: reach)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="default 0 1 2 (quick: 0)")
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default: the recipe's)")
    parser.add_argument("--eval-every", type=int, default=None, help="default: the recipe's (quick: 500)")
    parser.add_argument("--eval-episodes", type=int, default=None, help="default 20 (quick: 10)")
    parser.add_argument("--jobs", type=int, default=2, help="processes at a time (one learner and seed each)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where runs go (default: a temp dir)")
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=None, metavar="JSON",
        help="run nothing: combine earlier outputs on other seeds into one (--json), figures recomputed",
    )  # fmt: skip
    parser.add_argument("--lerobot-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lerobot_worker is not None:
        lerobot_worker(json.loads(args.lerobot_worker))
        return 0
    if args.merge:
        try:
            merged = merge(args.merge)
        except ValueError as exc:
            parser.error(str(exc))
        print_figures(merged)
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(merged, indent=2))
        return 0
    from foreign_envs import cpu_model
    from pixel_learning import git_commit, run_all

    tasks = args.tasks.split(",") if args.tasks else (["reach"] if args.quick else list(TASKS))
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"--tasks: unknown {unknown}; expected some of {list(TASKS)}")
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    eval_episodes = args.eval_episodes or (10 if args.quick else 20)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="lerobot_sac-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    runs: list[dict[str, Any]] = []
    for task in tasks:
        steps = args.steps or (QUICK_STEPS if args.quick else DEFAULT_STEPS[task])
        eval_every = args.eval_every or (500 if args.quick else EVAL_EVERY[task])
        for seed in seeds:
            for learner in ("ours", "lerobot"):
                name = f"{learner}-{task}-s{seed}"
                runs.append({"learner": learner, "task": task, "seed": seed, "steps": steps,
                             "eval_every": eval_every, "eval_episodes": eval_episodes,
                             "dir": str(work / name), "log": str(work / f"{name}.log"),
                             "out": str(work / f"{name}.json")})  # fmt: skip
    run_all(runs, args.jobs, {"ours": ours_command, "lerobot": lerobot_command})
    collect_curves(runs)
    result: dict[str, Any] = {"tasks": {t: summarize([r for r in runs if r["task"] == t]) for t in tasks}}
    print_figures(result)
    result |= {
        "lerobot_changes": LEROBOT_CHANGES,
        "lerobot_settings": LEROBOT_SETTINGS,
        "cpu_model": cpu_model(),
        "git_commit": git_commit(),
        "details": {
            "quick": args.quick,
            "seeds": seeds,
            "eval_episodes": eval_episodes,
            "jobs": args.jobs,
            "batch_size": BATCH_SIZE,
            "ours_args": {t: ours_args(t, 0, 0, "RUN_DIR") for t in tasks},
            "work_dir": str(work),
            "load_average_at_start": load,
            "cpu_count": os.cpu_count(),
            "lerobot_version": lerobot_version(),
        },
    }
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    failed = [r for r in runs if r.get("returncode")]
    for r in failed:
        print(f"{r['learner']} {r['task']} seed {r['seed']} failed (exit {r['returncode']}): see {r['log']}")
    return 1 if failed else 0


def lerobot_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lerobot")
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())

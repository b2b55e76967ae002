"""The config of a training run (`vlmrl train`, the Python API's `vlmrl.train`) and what it resolves to.

Both the `vlmrl train` pipeline and the trainer import it (neither imports the other). The replay mode is
resolved once in ``vlmrl.loop.replays``: ``REPLAYS`` names each mode's sampler config, the TrainConfig field with its
settings, and whether it takes the learner's TD errors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import tyro

from agents.config import IQLConfig, SACConfig
from buffer.config import (
    BufferConfig,
    PERSamplerConfig,
    PriorMixSamplerConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)
from sim.config import SimConfig
from sim.experts import EXPERTS
from vlm.config import (
    AuxRewardConfig,
    OracleConfig,
    WorkerConfig,
)
from vlmrl.config_ranges import (
    AT_LEAST_ONE,
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    UNIT,
    Range,
    check_ranges,
    register,
)
from vlmrl.errors import ConfigError
from vlmrl.evaluation.perturbation_grid import check_train_grid
from vlmrl.loop.replays import REPLAYS
from vlmrl.online.recipes import RecipeName
from vlmrl.scorers.choice import ScorerChoice

ReplayMode = Literal["uniform", "per", "vlm", "vlm_td"]


@dataclass(frozen=True, kw_only=True)
class RayConfig:
    """Where ``--actors`` (and ``--scorer.ray.actors``) run, a Ray cluster, and how the learner feeds its env actors."""

    address: str = ""
    """Ray cluster to join (what ``ray start --head`` prints, e.g. ``10.0.0.5:6379``; the machines need vlmrl
    installed); empty: start a local cluster with this machine's cores. A resume may name another one."""
    actor_cpus: float = 1.0
    """CPUs Ray reserves per env actor (the cluster must have ``actors`` x this)."""
    weights_every_updates: int = 100
    """Send the actors the learner's policy after this many gradient updates (one ``ray.put`` each time)."""
    max_in_flight: int = 2
    """Episode requests queued per actor: bounds how far actors run ahead of the learner (and memory)."""
    episode_timeout_s: float = 300.0
    """An actor whose episode takes longer is killed and restarted by Ray; the episode counts as lost."""


def default_train_sim() -> SimConfig:
    """``vlmrl train``'s twin by default (also ``vlmrl pretrain``'s, so its frames are the run's)."""
    return SimConfig(
        task="lift", reward="sparse", action_mode="delta", image_size=64, terminate_on_success=False
    )


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """One training run; every field has a default (`--demo` adds demonstrations, see ``demo``)."""

    LEGACY_DEFAULTS: ClassVar[dict[str, Any]] = {"prior_share": 0.0}
    """What a checkpoint written before a field existed gets for it where the field's default would change
    what the run does (``vlmrl.loop.checkpoint.fill_new_fields``): a resumed run goes on as it started."""

    sim: SimConfig = field(default_factory=default_train_sim)
    """The simulated env (training and evaluation use separate instances and seeds). Episodes do not end
    at success by default: with a sparse reward, ending the episode at the reward lets SAC's entropy bonus
    pay more for staying alive, and SAC learns to avoid success (measured on twin reach, sparse: 60%
    success at 2k steps, then 0% up to 8k; without termination 100% by 5k)."""
    agent: SACConfig = field(default_factory=lambda: SACConfig(hidden_dims=(128, 128), init_alpha=0.1))
    """SAC hyper-parameters (128x128 suits the 23-d state and keeps the demo within ~10 CPU minutes)."""
    buffer: Annotated[BufferConfig, tyro.conf.AvoidSubcommands] = field(
        default_factory=lambda: BufferConfig(capacity_steps=40_000, storage="zarr", frame_codec="blosc-lz4")
    )
    """Replay storage; ``replay`` picks the sampler (a sampler config of that kind keeps its settings)."""
    replay: ReplayMode = "vlm"
    """Replay: uniform, per (TD-error priorities), vlm (VLM-score / uniform mix), vlm_td (score x TD)."""
    # Plain (frozen, shared) defaults rather than default_factory: a class-level default lets checkpoints
    # pickled before these fields existed load and resume.
    vlm_sampler: VLMMixSamplerConfig = VLMMixSamplerConfig()  # noqa: RUF009
    """Settings of ``--replay vlm``: mixing weight and its warm-up, score exponent, importance weights."""
    per_sampler: PERSamplerConfig = PERSamplerConfig()  # noqa: RUF009
    """Settings of ``--replay per``."""
    vlm_td_sampler: VLMTDSamplerConfig = VLMTDSamplerConfig()  # noqa: RUF009
    """Settings of ``--replay vlm_td``."""
    scorer: ScorerChoice = field(default_factory=OracleConfig)
    """Clip scorer; oracle (privileged sim progress) needs no model. Unreachable VLMs fail at start."""
    prompt: str = ""
    """Question asked about each clip; empty: built from the env's task description
    (vlm.prompts.scorer_prompt: the goal question, or the goal caption for scorer:clip)."""
    score_calibration: Path | None = None
    """Score calibration JSON (``vlmrl score --fit-score-calibration``) that maps the scorer's scores
    before they set priorities and aux rewards; it must have been fitted for this scorer and prompt. The
    run keeps a copy (score_calibration.json), which a resume uses."""
    aux_reward_weight: float = 0.0
    """Weight of the VLM auxiliary reward added to sampled rewards (0: scores steer replay only)."""
    aux_reward: AuxRewardConfig = field(default_factory=lambda: AuxRewardConfig(kind="shaping"))
    """How clip scores become per-step auxiliary rewards. Its ``weight`` must stay 1: the one weight is
    ``aux_reward_weight`` (stored aux rewards are unweighted; the weight applies when a batch is drawn)."""
    reward_program: Path | None = None
    """Code-as-Reward program file (`vlmrl reward-program generate|verify`, status verified) for the SO-101
    twin: its dense reward (sub-tasks done in order plus the next one's progress, in [0, 1]) is computed for
    every training step in a sandboxed worker process. Evaluation still measures the task's own success. The
    run keeps a copy (reward_program.json), which a resume uses. None: no program."""
    reward_program_mode: Literal["add", "replace"] = "add"
    """add: the env's reward plus reward_program_weight x the CaR reward; replace: the weighted CaR reward alone."""
    reward_program_weight: float = 1.0
    """Weight of the CaR reward."""
    reward_shaping: Literal["none", "potential"] = "none"
    """potential: each training step's reward plus ``gamma * progress(s') - progress(s)`` (``buffer.gamma``; the
    task's privileged progress in [0, 1] as the potential, 0 after a terminal step; ``sim.wrappers.PotentialShaping``):
    the best policy is the same (Ng, Harada and Russell 1999) and every step says whether it got closer.
    Demonstrations get it too; evaluations count success. Training in a simulator only (a robot has no progress)."""
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    """The asynchronous scoring worker."""
    sync_scoring: bool = False
    """Wait for each episode's clips to be scored before going on (exactly reproducible VLM modes)."""
    policy_obs: Literal["state", "pixels", "robot"] = "state"
    """What the policy sees: the sim's state vector (privileged: object poses); the state plus the cameras'
    pixels (DrQ encoder); or robot: only what a real arm provides, the LeRobot joint keys plus the
    cameras' pixels, so `vlmrl deploy` / `vlmrl finetune` can run the policy on an arm."""
    total_steps: int = 30_000
    """Environment steps of the whole run (the last episode is finished, so it may run a little over)."""
    demo_episodes: int = 0
    """Episodes of the scripted expert (the SO-101 twin's, or Meta-World's own policy of the MT1 task; see
    ``sim.experts``) put in the replay buffer before training
    (demonstrations, as in RLPD or SAC from demonstrations). They are scored like any other clip and do not
    count in total_steps. Use with ``--agent.layer-norm``: with a plain critic, Q diverged on demonstrations.
    0: none."""
    demo_steps_after_success: int = -1
    """A demonstration ends this many steps after the expert's first success (truncated, not terminal: the
    learner bootstraps there); -1: it runs to the episode's end. The twin's push expert holds still once the
    cube is in the zone, so push demonstrations to the time limit are 80% standing still beside it; cut at 10,
    push was no better (50, 60% on seeds 0-1 against 60, 90%; results/deployable, section 14)."""
    demo_action_noise: float = 0.0
    """Standard deviation of Gaussian noise added to the scripted expert's actions while it records the
    demonstrations, in units of half the action range (clipped to it); the buffer stores the action the arm
    executed. The expert acts on the state it finds, so noisy demonstrations visit states off its clean path
    and show how it recovers from them (DART, Laskey et al. 2017); expert episodes that fail are dropped as
    always. On push it hurt, the more the worse: 56% and 26% on fresh seeds at 0.2 and 0.3 against the
    recipe's 63% (seeds 0-1; results/deployable, section 21). 0: clean demonstrations."""
    demo_updates: int = 0
    """Gradient updates on the demonstrations (and ``--prior-data``) alone before the first env step: the actor
    clones them (``--agent.bc-weight``) and the critics learn their values, so training starts from a policy
    that already does what the expert did (the offline phase of offline-to-online RL) instead of from a random
    one. Use with ``--learning-starts 0``, else the first steps still act at random; with ``--agent.proposals`` the
    actor as these updates leave it competes with the actor for the rest of the run (IBRL). Not env steps: the budget
    is unchanged, the wall-clock grows by about N updates. On push from the state vector 5,000 lifted the early
    curve (55% and 35% at 2,500 steps against 20%) and ended at 73% on fresh seeds against 66.5% (p = 0.16;
    results/deployable, section 31). 0: none."""
    prior_share: float = 0.5
    """Share of each batch drawn from the demonstrations and ``prior_data`` (RLPD's symmetric sampling,
    Ball et al. 2023), uniformly; the rest comes from online data by ``--replay``. 0: they are replayed
    like online data, by ``--replay``."""
    prior_data: Path | None = None
    """A zarr episode store (``vlmrl record``'s episodes.zarr, or an earlier run's buffer.zarr) whose
    episodes go into the replay buffer before training as prior data (RLPD), scored like any clip and not
    counted in total_steps. It must hold the arrays this run stores (same keys, cameras and image size)."""
    skip_corrupt: bool = False
    """With ``prior_data``: leave out its damaged episodes (named on the terminal) instead of stopping."""
    task_ramp_steps: int = 0
    """A curriculum on the task (twin push): each training episode's zone lies at most ``step / N`` of the way
    from 7 to 11 cm from the cube (the reset option ``difficulty``), so the first pushes are short and the
    task's own range is reached at step N; demonstrations and evaluations use the task's own range. At N =
    15,000 push ended where the recipe does (54% against 63% on fresh seeds; results/deployable, section 24).
    0: none."""
    jump_start_steps: int = 0
    """Jump-start the training episodes with the scripted expert (JSRL, Uchendu et al. 2023): episode e begins with
    the expert driving its first h steps, h uniform in [0, H], then the policy takes over from the state the
    expert left; H falls linearly from ``jump_start_horizon`` to 0 at env step N, so the policy first learns the
    ends of the task and then ever more of it on its own. The expert's steps are stored and counted as any
    training step (logged as train/guide_steps); demonstrations and evaluations are not guided. On push it hurt:
    44.5% and 45% on fresh seeds at N = 15,000 and 30,000 against the recipe's 63% (seeds 0-1; results/deployable,
    section 25). 0: none."""
    jump_start_horizon: int = 40
    """With ``jump_start_steps``: the most steps the expert drives at the run's start (the twin's push expert
    reaches the zone in 12-37 steps)."""
    takeover_stall_steps: int = 0
    """The scripted expert takes over a training episode once the policy stalls (HIL-SERL's interventions, an
    operator scripted as in `vlmrl finetune --operator scripted`): when the twin's tool has moved less than
    ``takeover_stall_m`` over the last N steps while the task does not hold, the expert drives to the episode's
    end. Its steps count as training steps and store ``info["intervention"]`` = 1 (logged as train/interventions
    and train/takeovers); with ``--buffer.prior-info-key intervention`` they join the demonstrations and are
    cloned, so the actor learns what the expert does where the policy stopped. SO-101 twin only. On push
    (N = 10) it hurt from robot observations, 46% on fresh seeds against the recipe's 63%, and left the state
    learner where it was (64% against 66.5%; results/deployable, section 28). 0: none."""
    takeover_stall_m: float = 0.005
    """With ``takeover_stall_steps``: the least movement of the tool (metres) over the window that is not a stall."""
    randomize_ramp_steps: int = 0
    """With ``--sim.randomize``: a curriculum. Each training episode's perturbation is drawn at most
    ``step / N`` of the full ranges (every factor's magnitude uniform in [0, step / N] x its range), so the
    run starts on the nominal twin and reaches the full randomisation at env step N. Demonstrations and
    evaluations use the full ranges. 0: the full ranges from the first step."""
    asymmetric_critic: bool = False
    """With ``--policy-obs robot``: the critics also read the sim's privileged ``state`` vector (simulation
    only); the actor and the exported policy still read only the robot's keys."""
    learning_starts: int = 1_000
    """Uniform-random actions for this many steps before the policy acts and updates start."""
    batch_size: int = 128
    """Transitions per gradient update."""
    eval_every_steps: int = 5_000
    """Evaluate after the episode in which the step count crosses a multiple of this."""
    eval_episodes: int = 10
    """Episodes per evaluation (deterministic policy, evaluation-only seeds)."""
    video_episodes: int = 2
    """Evaluation episodes of the final evaluation written to the report video (0: no video)."""
    evaluate_perturb: str | None = None
    """After training, run the final policy over the held-out perturbation grid of this randomisation
    preset (light, medium, strong; as ``vlmrl evaluate --perturb``, ``eval_episodes`` per row): writes
    perturbed.md, perturbed.json and perturbed_views.png and adds the table to report.md. SO-101 twin only."""
    checkpoint_every_steps: int = 5_000
    """Checkpoint after the episode in which the step count crosses a multiple of this."""
    stop_after_steps: int = 0
    """Stop this invocation (checkpoint and report, like Ctrl-C) after this many steps; 0: run to the end."""
    seed: int = 0
    """Seed of everything: env episodes, agent, buffer sampling, random warm-up actions."""
    run_dir: str = ""
    """Output directory; empty: runs/train-<task>-<time>."""
    resume: str = ""
    """Continue the run in this directory from its checkpoint (its saved config is used)."""
    torch_threads: int = 1
    """Torch threads for the learner (keep 1 per core in use; 2x2 threads on 2 cores is >10x slower)."""
    export_onnx: bool = False
    """Also write policy.onnx next to policy.pt."""
    progress: bool = True
    """Show the rich progress bar."""
    recipe: RecipeName = "none"
    """A named set of options (``vlmrl.online.recipes.RECIPES``) that replaces the defaults, so any option given beside
    it wins: deployable trains a policy a real SO-101 runs (robot observations, demonstrations, episodes that
    end at success; per-task budgets). What it set is printed and listed in the report."""
    demo: bool = False
    """The embedded demo (`make demo`): the defaults plus 25 scripted demonstrations in the buffer, a LayerNorm
    critic, behaviour cloning on them (weight 0.4, no Q-filter), discount 0.95 and 20,000 steps: the lift
    learner's recipe (results/lift-learner, setting D), each only where you left that option at its default."""
    offline: Path | None = None
    """Offline RL instead of simulation: IQL (or ``--iql.bc``) on these recorded episodes, a vlmrl zarr
    store (``vlmrl record``) or a LeRobotDataset (vlmrl/offline/run.py). ``total_steps``, ``eval_every_steps``
    and ``checkpoint_every_steps`` then count gradient steps; evaluation runs in the twin when the data came
    from it, otherwise on held-out episodes. ``--aux-reward-weight`` weights the stored aux reward (0: 1)."""
    reward: str = "sparse"
    """``--offline`` rewards: sparse (the episodes' success info), aux (the stored aux reward of the one
    scorer there is), scorer:<id> (that scorer's), or sparse+aux / sparse+scorer:<id>; ``vlmrl score`` stores them."""
    iql: IQLConfig = IQLConfig()  # noqa: RUF009
    """``--offline`` learner: IQL hyper-parameters (its seed is ``--seed``)."""
    actors: int = 0
    """Env actors (Ray processes, each with its own env and a CPU copy of the policy) that collect episodes
    for this learner, which stays the buffer's only writer (docs/ray.md). 0: one process,
    Ray is not imported."""
    ray: RayConfig = RayConfig()
    """With ``--actors``: the cluster and how the actors are fed."""
    then_online: int = 0
    """With ``--offline``: then this many env steps of SAC in the twin the data was recorded in, starting
    from the offline agent, the data being the prior part of each batch (vlmrl/online/offline_handover.py); the
    online run goes to ``<offline run>/online``. 0: offline only."""
    teacher_policy: Path | None = None
    """Distil this exported policy (a run's ``policy.pt``) into the actor with ``--agent.teacher-weight``: on every
    batch row the actor is pulled towards the teacher's action for that row (agents/config.py). The teacher
    reads keys the buffer stores, typically a state policy of the same task reading ``state``, the sim's
    privileged vector, which an asymmetric critic stores (``--asymmetric-critic``)."""
    agent_from: Path | None = None
    """Start SAC from this offline run's agent (``vlmrl train --offline``'s directory): its encoder, actor
    and Q-networks are handed over (agents/handover.py); the network sizes are the offline agent's."""


def resolve_buffer_config(cfg: TrainConfig, scorer_id: str) -> BufferConfig:
    """The buffer config a run uses: the replay mode's sampler, aux reward wiring, the run's seed.

    The sampler is ``cfg.buffer.sampler`` when it is of the mode's kind (the Python API), else the mode's
    settings field (``--per-sampler.*``, ``--vlm-sampler.*``, ``--vlm-td-sampler.*``).
    """
    replay = REPLAYS[cfg.replay]
    sampler: Any = (
        cfg.buffer.sampler
        if isinstance(cfg.buffer.sampler, replay.sampler)
        else getattr(cfg, replay.settings_field)
        if replay.settings_field
        else replay.sampler()
    )
    if (cfg.demo_episodes > 0 or cfg.prior_data) and cfg.prior_share > 0:  # the prior part (RLPD)
        sampler = PriorMixSamplerConfig(prior_share=cfg.prior_share, online=sampler)
    return dataclasses.replace(
        cfg.buffer,
        sampler=sampler,
        aux_reward_scorer=scorer_id if cfg.aux_reward_weight > 0 else "",
        aux_reward_weight=cfg.aux_reward_weight,
        priority_scorer=scorer_id,
        seed=cfg.seed,
    )


def check_config(cfg: TrainConfig, new_run: bool = True) -> None:
    """One-line ConfigErrors for settings that cannot run together (``new_run`` False: a resumed run,
    whose checkpoint may predate a rule and keeps the semantics it started with)."""
    check_ranges(cfg)  # every numeric option within its range first (issue #36)
    if cfg.total_steps < 1 or cfg.batch_size < 1 or cfg.eval_episodes < 1:
        raise ConfigError("total_steps, batch_size and eval_episodes must be >= 1")

    check_train_grid(cfg.evaluate_perturb, cfg.sim.suite)
    if cfg.eval_every_steps < 1 or cfg.checkpoint_every_steps < 1:
        raise ConfigError("eval_every_steps and checkpoint_every_steps must be >= 1")
    if cfg.replay not in REPLAYS:
        raise ConfigError(f"replay {cfg.replay!r}: choose one of {', '.join(REPLAYS)}")
    for mode, replay in REPLAYS.items():  # settings of another mode would be silently ignored (issue #15)
        settings = getattr(cfg, replay.settings_field) if replay.settings_field else None
        if new_run and mode != cfg.replay and settings is not None and settings != type(settings)():
            option = replay.settings_field.replace("_", "-")
            raise ConfigError(
                f"--{option}.* settings apply to --replay {mode} only, and this run uses --replay {cfg.replay}: "
                f"add --replay {mode}, or drop the --{option}.* options"
            )
    if not cfg.sim.cameras and (REPLAYS[cfg.replay].needs_scores or cfg.aux_reward_weight > 0):
        raise ConfigError(
            f"replay {cfg.replay!r} / aux_reward_weight {cfg.aux_reward_weight} need clips: give the sim a camera "
            "(--sim.cameras front) or use --replay uniform|per with --aux-reward-weight 0"
        )
    if new_run and cfg.aux_reward.weight != 1.0:
        raise ConfigError(
            f"aux_reward.weight {cfg.aux_reward.weight}: the aux reward has one weight, aux_reward_weight "
            f"(set --aux-reward-weight {cfg.aux_reward_weight * cfg.aux_reward.weight:g} and leave aux_reward.weight at 1)"
        )
    if cfg.demo_updates and not (cfg.demo_episodes or cfg.prior_data):
        raise ConfigError(
            f"demo_updates {cfg.demo_updates} needs data to update on: add --demo-episodes N or --prior-data PATH"
        )
    if cfg.agent.proposals and not cfg.demo_updates:
        raise ConfigError(
            "agent.proposals needs --demo-updates N: the proposer is the actor as those updates leave it"
        )
    if cfg.demo_episodes < 0:
        raise ConfigError(f"demo_episodes must be >= 0, got {cfg.demo_episodes}")
    if not 0.0 <= cfg.prior_share <= 1.0:
        raise ConfigError(f"prior_share must be in [0, 1], got {cfg.prior_share}")
    if cfg.agent.bc_weight > 0 and (cfg.prior_share == 0 or not (cfg.demo_episodes or cfg.prior_data)):
        raise ConfigError(
            f"agent.bc_weight {cfg.agent.bc_weight:g} clones the prior part of each batch: add "
            "--demo-episodes N or --prior-data PATH, with --prior-share > 0"
        )
    if (cfg.teacher_policy is None) != (cfg.agent.teacher_weight == 0):
        raise ConfigError(
            "a teacher needs both --teacher-policy PATH (a policy.pt) and --agent.teacher-weight > 0, got "
            f"--teacher-policy {cfg.teacher_policy} and --agent.teacher-weight {cfg.agent.teacher_weight:g}"
        )
    if cfg.agent_from is not None and cfg.asymmetric_critic:
        raise ConfigError(
            "agent_from: an offline agent's Q-networks read no privileged state; drop --asymmetric-critic"
        )
    if cfg.agent.actor_reads_estimate and not (cfg.asymmetric_critic and cfg.agent.privileged_aux_weight > 0):
        raise ConfigError(
            "agent.actor_reads_estimate reads the auxiliary head's state estimate: add --asymmetric-critic and "
            "--agent.privileged-aux-weight > 0"
        )
    if cfg.task_ramp_steps and (cfg.sim.suite != "so101" or cfg.sim.task != "push"):
        raise ConfigError(
            f"task_ramp_steps ramps the push zone's distance: it needs --sim.task push on the SO-101 twin, "
            f"not {cfg.sim.suite} {cfg.sim.task}"
        )
    if cfg.randomize_ramp_steps < 0:
        raise ConfigError(f"randomize_ramp_steps must be >= 0, got {cfg.randomize_ramp_steps}")
    if cfg.randomize_ramp_steps and (cfg.sim.suite != "so101" or cfg.sim.randomize.preset == "none"):
        raise ConfigError(
            "randomize_ramp_steps ramps the twin's randomisation up: set --sim.randomize.preset "
            "(light, medium or strong) on the SO-101 twin"
        )
    if cfg.jump_start_steps and cfg.sim.suite not in EXPERTS:
        raise ConfigError(
            f"jump_start_steps needs a scripted expert (--sim.suite {' or '.join(sorted(EXPERTS))}), "
            f"and {cfg.sim.suite!r} has none"
        )
    if cfg.takeover_stall_steps and cfg.sim.suite != "so101":
        raise ConfigError(
            f"takeover_stall_steps watches the SO-101 twin's tool: it needs --sim.suite so101, not {cfg.sim.suite!r}"
        )
    if cfg.takeover_stall_steps == 1:
        raise ConfigError("takeover_stall_steps must be 0 (off) or >= 2 (a window of steps), got 1")
    # The curricula, the expert's jump starts and its takeovers reach only the learner's own env.
    for ramp in ("randomize_ramp_steps", "task_ramp_steps", "jump_start_steps", "takeover_stall_steps"):
        if getattr(cfg, ramp) and cfg.actors:
            raise ConfigError(
                f"{ramp} is not supported with --actors (it reaches only the learner's own env)"
            )
    if cfg.asymmetric_critic and cfg.policy_obs != "robot":
        raise ConfigError(
            "asymmetric_critic needs --policy-obs robot (with state the actor reads it already)"
        )
    if cfg.demo_episodes and cfg.sim.suite not in EXPERTS:
        raise ConfigError(
            f"demo_episodes needs a scripted expert (--sim.suite {' or '.join(sorted(EXPERTS))}), "
            f"and {cfg.sim.suite!r} has none"
        )
    if cfg.reward_program is not None and cfg.sim.suite != "so101":
        raise ConfigError(f"reward_program needs the SO-101 twin (--sim.suite so101), not {cfg.sim.suite!r}")
    if cfg.policy_obs == "robot" and cfg.sim.suite != "so101":
        raise ConfigError("policy_obs 'robot' needs an arm with LeRobot joint keys: --sim.suite so101")
    if cfg.policy_obs == "pixels" and not cfg.sim.cameras:
        raise ConfigError("policy_obs 'pixels' needs at least one camera in --sim.cameras")
    check_actors(cfg)
    if cfg.policy_obs in ("pixels", "robot") and cfg.buffer.frame_stack != 1:
        raise ConfigError(
            "policy_obs 'pixels' supports --buffer.frame-stack 1 only (the policy sees one frame)"
        )


def check_actors(cfg: TrainConfig) -> None:
    """One-line ConfigErrors for ``--actors`` settings (and what actors cannot run with yet)."""
    check_ray_actors(cfg.actors, cfg.ray)
    if not cfg.actors:
        return
    if cfg.reward_program is not None:
        raise ConfigError("--reward-program runs in the learner's env only: drop it or --actors")
    if cfg.reward_shaping != "none":
        raise ConfigError("--reward-shaping runs in the learner's env only: drop it or --actors")
    if cfg.prior_data is not None:
        raise ConfigError(
            "--prior-data with --actors: not supported yet (its store has no policy_version column)"
        )
    if cfg.agent.proposals:
        raise ConfigError(
            "agent.proposals is not supported with --actors (the actors act without the critics)"
        )


def check_ray_actors(actors: int, ray: RayConfig) -> None:
    """One-line ConfigErrors for an actor count and the Ray settings that feed them (train and finetune)."""
    if actors < 0:
        raise ConfigError(f"actors must be >= 0, got {actors}")
    if not actors:
        return
    if (
        ray.actor_cpus <= 0
        or ray.weights_every_updates < 1
        or ray.max_in_flight < 1
        or ray.episode_timeout_s <= 0
    ):
        raise ConfigError(
            "ray.actor_cpus and ray.episode_timeout_s must be > 0, ray.weights_every_updates and "
            "ray.max_in_flight >= 1"
        )


def resolved_dict(cfg: TrainConfig) -> dict[str, Any]:
    """The config as plain data (written to config.json), with the scorer's backend named."""
    data = dataclasses.asdict(cfg)
    data["scorer"]["kind"] = cfg.scorer.kind
    return data


# The numeric options' valid ranges (vlmrl/config_ranges.py checks them; registered here so that module
# does not import this one).
register(
    RayConfig,
    {
        "actor_cpus": POSITIVE,
        "weights_every_updates": AT_LEAST_ONE,
        "max_in_flight": AT_LEAST_ONE,
        "episode_timeout_s": POSITIVE,
    },
)
register(
    TrainConfig,
    {
        "aux_reward_weight": NON_NEGATIVE,
        "reward_program_weight": NON_NEGATIVE,
        "total_steps": AT_LEAST_ONE,
        "demo_episodes": NON_NEGATIVE,
        "demo_steps_after_success": Range(-1),  # -1: to the episode's end
        "demo_action_noise": NON_NEGATIVE,
        "demo_updates": NON_NEGATIVE,
        "prior_share": UNIT,
        "randomize_ramp_steps": NON_NEGATIVE,
        "task_ramp_steps": NON_NEGATIVE,
        "jump_start_steps": NON_NEGATIVE,
        "jump_start_horizon": AT_LEAST_ONE,
        "takeover_stall_steps": NON_NEGATIVE,
        "takeover_stall_m": POSITIVE,
        "learning_starts": NON_NEGATIVE,
        "batch_size": AT_LEAST_ONE,
        "eval_every_steps": AT_LEAST_ONE,
        "eval_episodes": AT_LEAST_ONE,
        "video_episodes": NON_NEGATIVE,
        "checkpoint_every_steps": AT_LEAST_ONE,
        "stop_after_steps": NON_NEGATIVE,
        "seed": SEED,
        "torch_threads": AT_LEAST_ONE,
        "actors": NON_NEGATIVE,
        "then_online": NON_NEGATIVE,
    },
)

"""The Python API: the pipelines of the CLI as functions, for scripts and notebooks.

    import vlmrl

    result = vlmrl.train(vlmrl.TrainConfig(total_steps=5_000, run_dir="runs/reach"))
    print(result.metrics["success_rate"], result.policy)

Each function takes the config dataclass its CLI verb builds (``vlmrl <verb> --help`` documents every
field) and returns a ``RunResult`` (run directory, metrics, policy path, outputs). Beyond the CLI, a
script can pass what the package does not know about, without editing it:

- ``scorer=`` (train, score): any object meeting the ``vlm.Scorer`` protocol (``scorer_id``, ``model_id``,
  ``score(clips, prompt)``, ``close()``) judges the clips instead of the one the config names;
- ``tasks=``: SO-101 twin tasks ``{name: task class}`` (see ``sim.so101.tasks``) usable by name in
  ``SimConfig.task`` / ``--task`` during the call;
- ``robots=``: LeRobot robot types ``{type: factory(ArmConfig) -> Robot}`` usable as ``robot.type``;
- ``env_factory=`` (train): builds the envs from the ``SimConfig`` (any env meeting the Env contract).

A run resumed through the API needs the same custom pieces again (checkpoints store configs, not code).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlmrl.results import RunResult

if TYPE_CHECKING:
    from vlm.scorer import Scorer
    from vlmrl.online.config import TrainConfig
    from vlmrl.pipelines.deploy import Config as DeployConfig
    from vlmrl.pipelines.finetune import Config as FinetuneConfig
    from vlmrl.pipelines.record import Config as RecordConfig
    from vlmrl.pipelines.score import Config as ScoreConfig

__all__ = ["RunResult", "deploy", "finetune", "record", "score", "train", "twin_tasks"]


@contextmanager
def twin_tasks(tasks: Mapping[str, Callable[[], Any]] | None) -> Iterator[None]:
    """Within the block, the SO-101 twin also knows these tasks by name (``sim.so101.tasks.TASKS``); the
    table is restored afterwards, so nothing stays registered."""
    if not tasks:
        yield
        return
    from sim.so101.tasks import TASKS

    saved = dict(TASKS)
    TASKS.update(tasks)
    try:
        yield
    finally:
        TASKS.clear()
        TASKS.update(saved)


@contextmanager
def _custom(
    tasks: Mapping[str, Callable[[], Any]] | None, robots: Mapping[str, Any] | None
) -> Iterator[None]:
    with ExitStack() as stack:
        stack.enter_context(twin_tasks(tasks))
        if robots:
            from vlmrl.deployment.robot_env import robot_types

            stack.enter_context(robot_types(dict(robots)))
        yield


def train(
    cfg: TrainConfig | None = None,
    *,
    scorer: Scorer | None = None,
    tasks: Mapping[str, Callable[[], Any]] | None = None,
    env_factory: Callable[[Any], Any] | None = None,
) -> RunResult:
    """`vlmrl train`: SAC in simulation (``cfg.resume``: continue a run). ``metrics``: steps, episodes
    and the final evaluation (``success_rate``, ``return``, ``length``); ``policy``: the exported policy.pt."""
    from vlmrl.online.config import TrainConfig
    from vlmrl.pipelines import train as pipeline

    with _custom(tasks, None):
        return pipeline.run(cfg or TrainConfig(), scorer=scorer, env_factory=env_factory)


def finetune(
    cfg: FinetuneConfig,
    *,
    robots: Mapping[str, Any] | None = None,
    tasks: Mapping[str, Callable[[], Any]] | None = None,
) -> RunResult:
    """`vlmrl finetune`: SAC on a robot (or its twin) from a sim run. ``metrics``: the last episode's."""
    from vlmrl.pipelines import finetune as pipeline

    with _custom(tasks, robots):
        last = pipeline.run(cfg)
    policy = cfg.out_dir / "policy.pt"
    return RunResult(cfg.out_dir, last, policy, {"policy": policy, "metrics": cfg.out_dir / "metrics.jsonl"})


def deploy(
    cfg: DeployConfig,
    *,
    robots: Mapping[str, Any] | None = None,
    tasks: Mapping[str, Callable[[], Any]] | None = None,
) -> RunResult:
    """`vlmrl deploy`: run an exported policy through the safety layer. ``metrics``: metrics.json."""
    from vlmrl.pipelines import deploy as pipeline

    with _custom(tasks, robots):
        pipeline.main(cfg)
    path = cfg.out_dir / "metrics.json"
    return RunResult(cfg.out_dir, json.loads(path.read_text()), cfg.policy, {"metrics": path})


def record(
    cfg: RecordConfig,
    *,
    robots: Mapping[str, Any] | None = None,
    tasks: Mapping[str, Callable[[], Any]] | None = None,
) -> RunResult:
    """`vlmrl record`: record episodes to ``out_dir/episodes.zarr`` (and a LeRobotDataset).
    ``metrics``: the number of episodes recorded by this call (discarded ones are recorded again)."""
    from vlmrl.pipelines import record as pipeline

    with _custom(tasks, robots):
        pipeline.main(cfg)
    store = cfg.out_dir / "episodes.zarr"
    outputs = {"episodes": store}
    if getattr(cfg, "export_lerobot", False):
        outputs["lerobot"] = cfg.out_dir / "lerobot"
    return RunResult(cfg.out_dir, {"episodes": cfg.episodes}, getattr(cfg, "policy", None), outputs)


def score(cfg: ScoreConfig, *, scorer: Scorer | None = None) -> RunResult:
    """`vlmrl score`: score recorded episodes; scores and aux rewards go beside the data.
    ``metrics``: summary.json (scorer id, prompt, per-episode rows)."""
    from vlmrl.pipelines import score as pipeline

    pipeline.main(cfg, custom_scorer=scorer)
    out_dir = cfg.out_dir or cfg.episodes.parent / f"{cfg.episodes.name}-report"
    path = out_dir / "summary.json"
    metrics = json.loads(path.read_text()) if path.is_file() else {}
    return RunResult(Path(out_dir), metrics, None, {"summary": path})

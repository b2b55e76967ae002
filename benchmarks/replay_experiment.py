"""The VLM-guided replay experiment (issue #8): replay modes x oracle label noise x seeds on sparse tasks.

Every run is a real `vlmrl train` process (state policy, frames rendered for the scorer, the oracle
scorer: privileged sim progress standing in for a VLM, with label noise emulating an imperfect one).
Runs go in parallel on the available cores, one torch thread each; the results file is JSON lines, one
line per finished run, and a rerun skips finished runs and resumes interrupted ones from their
checkpoints. Analyse with `benchmarks/replay_analysis.py`.

With ``--ray-address`` (an address, ``auto`` or ``local``) each run is a Ray task instead, with its CPU
(and GPU) request, so the grid spreads over a cluster; the driver writes the results file as runs end
(docs/ray.md, "Grids on a Ray cluster").

    python benchmarks/replay_experiment.py --quick                 # a small grid, minutes
    python benchmarks/replay_experiment.py --tasks lift place --seeds 0 1 2 --total-steps 40000
    python benchmarks/replay_experiment.py --tasks lift --demo-episodes 10 --total-steps 20000
    python benchmarks/replay_experiment.py --ray-address auto --seeds 0 1 2 3 4 5 6 7   # on a cluster

The registered grid of issue #35 (`results/vlm-replay/README.md`) is one table of named cells
(``CELLS``): ``--cell NAME --seed S`` runs one, preparing what it needs first (a learned scorer: its
labelled recordings and `vlmrl scorer fit`), and ``--dry-run`` prints those commands instead:

    python benchmarks/replay_experiment.py --list-cells
    python benchmarks/replay_experiment.py --cell metaworld/drawer-open/vlm-learned --seed 3 --dry-run
    python benchmarks/replay_experiment.py --cell twin/lift/demos5/uniform --seed 0
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RunSpec:
    task: str
    mode: str
    noise: float
    aux_weight: float
    seed: int
    total_steps: int
    eval_every_steps: int
    eval_episodes: int
    demo_episodes: int = 0
    layer_norm: bool = False
    """LayerNorm in the critics (`--agent.layer-norm`): keeps Q bounded when demonstrations are replayed."""
    variant: str = ""
    """A name for the extra `vlmrl train` options of this invocation (empty: the defaults)."""
    train_args: tuple[str, ...] = ()
    scorer: str = "scorer:oracle"
    """The `vlmrl train` scorer subcommand and its options (the oracle gets ``--scorer.noise`` from ``noise``)."""
    cell: str = ""
    """The registered cell this run belongs to (``CELLS``; empty: a run of an ad-hoc grid)."""

    @property
    def name(self) -> str:
        demos = f"-demos{self.demo_episodes}" if self.demo_episodes else ""
        demos += "-ln" if self.layer_norm else ""
        variant = f"-{self.variant}" if self.variant else ""
        return (
            f"{self.task}{demos}-{self.mode}{variant}-noise{self.noise:g}-aux{self.aux_weight:g}-seed{self.seed}"
            f"-steps{self.total_steps}"
        )

    @property
    def uses_scorer(self) -> bool:
        return self.mode in ("vlm", "vlm_td") or self.aux_weight > 0


def grid(args: argparse.Namespace) -> list[RunSpec]:
    """Scorer-free modes run once per seed (noise is meaningless for them); VLM modes per noise level."""
    specs = []
    for task, mode, seed in itertools.product(args.tasks, args.modes, args.seeds):
        scored = mode in ("vlm", "vlm_td")
        for noise in args.noise if scored else [0.0]:
            for aux in args.aux_weights if mode == "vlm" else [0.0]:
                specs.append(
                    RunSpec(
                        task,
                        mode,
                        noise,
                        aux,
                        seed,
                        args.total_steps,
                        args.eval_every_steps,
                        args.eval_episodes,
                        args.demo_episodes,
                        args.layer_norm,
                        args.variant,
                        tuple(args.train_arg),
                        args.scorer,
                    )
                )
    return specs


ISSUE35_SEEDS = (0, 1, 2, 3, 4)
"""The registered seeds of every cell."""
METAWORLD_CANDIDATES = (
    "drawer-open", "window-open", "button-press-topdown", "door-open", "handle-press", "plate-slide",
    "reach", "push",
)  # fmt: skip
"""MT1 tasks (without ``-v3``) in the order the pilot tries them: the first three where uniform replay ends
between 10% and 70% success at the budget are the grid's tasks (results/vlm-replay/README.md)."""
METAWORLD_DEMOS = (0, 5)
"""Demonstrations of the Meta-World cells: 0, and 5 if fewer than three candidates qualify without them."""
METAWORLD_STEPS, METAWORLD_EVAL_EVERY, METAWORLD_EVAL_EPISODES = 50_000, 5_000, 20
METAWORLD_ARGS = (
    "--sim.suite=metaworld", "--sim.cameras", "corner", "--sim.image-size=64", "--sim.terminate-on-success",
    "--buffer.absorbing-terminal", "--buffer.gamma=0.99", "--buffer.storage=memory",
    "--buffer.capacity-steps=60000", "--agent.hidden-dims", "256", "256",
)  # fmt: skip
"""Meta-World cells: state policy, sparse reward, episodes that end at success valued as held for ever
(the absorbing terminal, docs/deployable.md), the 64 px ``corner`` frame for the scorer, 200-step episodes."""
FRAMELESS_CONDITIONS = ("uniform", "per")
"""Meta-World conditions without clips (no scorer): no camera (``--sim.cameras`` empty). The state policy never
reads the frame, so the run learns exactly the same (results/vlm-replay/README.md, amendment 1) at about half
the wall-clock; ``vlm`` replay builds its clips from frames, so the oracle's cells keep the camera."""
TWIN_TASKS, TWIN_DEMOS = ("lift", "place"), (0, 5, 25)
TWIN_STEPS, TWIN_EVAL_EVERY, TWIN_EVAL_EPISODES = 20_000, 2_500, 20
TWIN_ARGS = (
    "--policy-obs=robot", "--asymmetric-critic", "--agent.privileged-aux-weight=1.0", "--buffer.gamma=0.95",
    "--buffer.storage=memory",
)  # fmt: skip
"""Twin cells: robot observations (joints + 64 px front camera) with the pixel recipe of
results/replay-robot-patch; with demonstrations also recipe D's behaviour cloning (weight 0.4, no Q-filter)."""
TWIN_DEMO_ARGS = ("--agent.bc-weight=0.4", "--agent.no-bc-q-filter")


@dataclass(frozen=True)
class Cell:
    """One registered condition of the grid: everything of a run but its seed."""

    name: str
    """``metaworld/<task>[/demos<N>]/<condition>`` or ``twin/<task>/demos<N>/<condition>``."""
    task: str
    """The ``--sim.task`` (Meta-World: the MT1 name with ``-v3``)."""
    mode: str
    noise: float
    demo_episodes: int
    total_steps: int
    eval_every_steps: int
    eval_episodes: int
    train_args: tuple[str, ...]
    variant: str
    scorer: str = "scorer:oracle"
    student: str = ""
    """The learned scorer the cell needs, relative to ``--out`` (empty: none); ``prepare_commands`` make it."""

    def spec(self, seed: int, out: Path) -> RunSpec:
        scorer = self.scorer.replace("{student}", str(out / self.student)) if self.student else self.scorer
        return RunSpec(
            self.task, self.mode, self.noise, 0.0, seed, self.total_steps, self.eval_every_steps,
            self.eval_episodes, self.demo_episodes, layer_norm=True, variant=self.variant,
            train_args=self.train_args, scorer=scorer, cell=self.name,
        )  # fmt: skip


def _conditions(learned_scorer: str) -> dict[str, dict]:
    return {
        "uniform": {"mode": "uniform", "noise": 0.0},
        "per": {"mode": "per", "noise": 0.0},
        "vlm-oracle": {"mode": "vlm", "noise": 0.0},
        "vlm-oracle-noise0.2": {"mode": "vlm", "noise": 0.2},
        "vlm-learned": {"mode": "vlm", "noise": 0.0, "scorer": learned_scorer},
    }


METAWORLD_CONDITIONS = ("uniform", "per", "vlm-oracle", "vlm-oracle-noise0.2", "vlm-learned")
TWIN_CONDITIONS = ("uniform", "vlm-oracle", "vlm-learned")
LEARNED = "scorer:learned --scorer.path {student}"


def frameless(args: tuple[str, ...]) -> tuple[str, ...]:
    """``args`` with the camera dropped: ``--sim.cameras`` given no camera."""
    at = args.index("--sim.cameras")
    return (*args[: at + 1], *args[at + 2 :])


def registered_cells() -> dict[str, Cell]:
    """Every cell of issue #35's pre-registered grid, by name (the README's table is this one)."""
    cells: dict[str, Cell] = {}
    for task, demos, condition in itertools.product(
        METAWORLD_CANDIDATES, METAWORLD_DEMOS, METAWORLD_CONDITIONS
    ):
        name = f"metaworld/{task}/{f'demos{demos}/' if demos else ''}{condition}"
        settings = _conditions(LEARNED)[condition]
        learned = condition == "vlm-learned"
        cells[name] = Cell(
            name=name, task=f"{task}-v3", demo_episodes=demos, total_steps=METAWORLD_STEPS,
            eval_every_steps=METAWORLD_EVAL_EVERY, eval_episodes=METAWORLD_EVAL_EPISODES,
            train_args=frameless(METAWORLD_ARGS) if condition in FRAMELESS_CONDITIONS else METAWORLD_ARGS,
            variant="mw-learned" if learned else "mw",
            student=f"students/metaworld-{task}.pt" if learned else "", **settings,
        )  # fmt: skip
    for task, demos, condition in itertools.product(TWIN_TASKS, TWIN_DEMOS, TWIN_CONDITIONS):
        name = f"twin/{task}/demos{demos}/{condition}"
        learned = condition == "vlm-learned"
        cells[name] = Cell(
            name=name, task=task, demo_episodes=demos, total_steps=TWIN_STEPS,
            eval_every_steps=TWIN_EVAL_EVERY, eval_episodes=TWIN_EVAL_EPISODES,
            train_args=TWIN_ARGS + (TWIN_DEMO_ARGS if demos else ()),
            variant="robot-learned" if learned else "robot",
            student=f"students/twin-{task}.pt" if learned else "", **_conditions(LEARNED)[condition],
        )  # fmt: skip
    return cells


CELLS: dict[str, Cell] = registered_cells()
"""The registered cells by name."""


def prepare_commands(cell: Cell, out: Path) -> list[list[str]]:
    """The commands that make the cell's learned scorer (recordings, then `vlmrl scorer fit`), user-facing:
    ``vlmrl ...`` and ``python benchmarks/...``; empty for a cell without one."""
    if not cell.student:
        return []
    student = out / cell.student
    data = out / "recordings" / Path(cell.student).stem
    fit = ["vlmrl", "scorer", "fit", str(data / "episodes.zarr"), "--out", str(student), "--no-progress"]
    if cell.name.startswith("metaworld/"):
        record = [
            "python", "benchmarks/metaworld_recordings.py", cell.task, "--out", str(data),
            "--episodes", "60", "--image-size", "64", "--camera", "corner",
        ]  # fmt: skip
        return [record, fit]
    # The twin: 12 scripted successes and 8 failures cut short (results/scorers/commands.sh's mix).
    base = [
        "vlmrl", "record", "--source", "scripted", "--task", cell.task, "--env.image-size", "64",
        "--no-export-lerobot", "--env.watchdog.no-enabled", "--out-dir", str(data),
    ]  # fmt: skip
    return [
        [*base, "--episodes", "12", "--seed", "0"],
        [*base, "--episodes", "4", "--seed", "100", "--env.max-episode-steps", "10"],
        [*base, "--episodes", "4", "--seed", "200", "--env.max-episode-steps", "18"],
        fit,
    ]


def cell_commands(cell: Cell, seed: int, out: Path) -> list[list[str]]:
    """The cell's commands for one seed, in order: what prepares its scorer, then `vlmrl train`."""
    spec = cell.spec(seed, out)
    return [*prepare_commands(cell, out), ["vlmrl", *train_argv(spec, out / "runs" / spec.name)]]


def executable(command: list[str]) -> list[str]:
    """A user-facing command as this interpreter runs it (``vlmrl`` -> ``python -m vlmrl``)."""
    head = {"vlmrl": [sys.executable, "-m", "vlmrl"], "python": [sys.executable]}[command[0]]
    return [*head, *command[1:]]


def run_cell(name: str, seed: int, out: Path, dry_run: bool) -> int:
    """Runs one registered cell for one seed (its scorer first, if missing); ``dry_run`` prints the commands.
    Paths are relative to the working directory: run from the repository root, as the README's commands do."""
    if name not in CELLS:
        close = [c for c in CELLS if c.startswith(name.rsplit("/", 1)[0])][:8] or list(CELLS)[:8]
        raise SystemExit(f"--cell {name}: not a registered cell; e.g. {', '.join(close)} (see --list-cells)")
    cell = CELLS[name]
    spec = cell.spec(seed, out)
    prepare = [] if cell.student and (out / cell.student).exists() else prepare_commands(cell, out)
    train = ["vlmrl", *train_argv(spec, out / "runs" / spec.name)]
    if dry_run:
        for command in [*prepare, train]:
            print(shlex.join(command))
        return 0
    if seed not in ISSUE35_SEEDS:
        print(f"seed {seed} is not one of the registered seeds {ISSUE35_SEEDS}: an extension, not the grid")
    if spec.name in finished_names(out):
        print(f"{name} seed {seed}: already in {out / 'results.jsonl'} ({spec.name})")
        return 0
    if prepare:
        prepare_student(cell, out, prepare)
    lock = threading.Lock()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    out.mkdir(parents=True, exist_ok=True)
    return 0 if run_one(spec, out, lock, log) is not None else 1


def prepare_student(cell: Cell, out: Path, commands: list[list[str]]) -> None:
    """Runs the commands that make the cell's student, once: two runs started together (two seeds of one
    cell) wait on one lock file, and the second finds the student made. A recording left by a prepare that
    failed is not overwritten or extended: the error names it."""
    import fcntl

    student = out / cell.student
    student.parent.mkdir(parents=True, exist_ok=True)
    with open(student.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if student.exists():
            return
        data = out / "recordings" / student.stem
        if data.exists():
            raise SystemExit(
                f"{data} exists but {student} does not (an earlier prepare failed?): remove {data} to "
                "record it again, or fit the student from it yourself"
            )
        for command in commands:
            print(f"preparing {cell.student}: {shlex.join(command)}", flush=True)
            subprocess.run(executable(command), check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))


def train_command(spec: RunSpec, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "vlmrl", *train_argv(spec, run_dir)]


def train_argv(spec: RunSpec, run_dir: Path) -> list[str]:
    """The `vlmrl` arguments of a run: a new one, or the resume of an interrupted one (it has a checkpoint)."""
    if (run_dir / "checkpoint").exists():
        return ["train", "--resume", str(run_dir), "--no-progress"]
    cmd = [
        "train",
        "--sim.task", spec.task, "--sim.reward", "sparse",
        "--replay", spec.mode, "--seed", str(spec.seed),
        "--total-steps", str(spec.total_steps),
        "--eval-every-steps", str(spec.eval_every_steps), "--eval-episodes", str(spec.eval_episodes),
        "--checkpoint-every-steps", str(spec.eval_every_steps),
        "--aux-reward-weight", str(spec.aux_weight), "--demo-episodes", str(spec.demo_episodes),
        "--video-episodes", "0", "--no-progress", "--torch-threads", "1",
        "--run-dir", str(run_dir), *(["--agent.layer-norm"] if spec.layer_norm else []), *spec.train_args,
    ]  # fmt: skip
    if spec.uses_scorer:
        cmd += shlex.split(spec.scorer)
        if spec.scorer == "scorer:oracle":
            cmd += ["--scorer.noise", str(spec.noise), "--scorer.seed", str(spec.seed)]
    return cmd


def provenance() -> dict[str, object]:
    """The code and machine a run came from: the git commit, whether the tree was clean, the CPU model."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "commit": git("rev-parse", "--short", "HEAD") or None,
        "tree_clean": git("status", "--porcelain", "--untracked-files=no") == "",
        "cpu": cpu or platform.processor() or None,
        "cores": os.cpu_count(),
    }


def read_evals(run_dir: Path) -> list[dict[str, float]]:
    """The scheduled evaluations of a run, from its TensorBoard scalars."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags().get("scalars", [])
    series: dict[int, dict[str, float]] = {}
    for tag, name in (("eval/success_rate", "success_rate"), ("eval/return", "mean_return")):
        if tag in tags:
            for event in acc.Scalars(tag):  # a resumed run rewrites its tail: keep the last value per step
                series.setdefault(event.step, {"step": float(event.step)})[name] = float(event.value)
    return [series[step] for step in sorted(series)]


def mean_scalar(run_dir: Path, tag: str) -> float | None:
    """Mean of a training scalar over the whole run (None when the run did not log it)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags().get("scalars", []):
        return None
    return float(sum(e.value for e in acc.Scalars(tag)) / max(1, len(acc.Scalars(tag))))


REPLAY_PREFIX = "replay/"
"""The replay diagnostics every run logs (``buffer.replay_stats``; results/vlm-replay/README.md, "Diagnostics")."""


def replay_diagnostics(run_dir: Path, total_steps: int) -> dict[str, dict[str, float]]:
    """Each ``replay/`` scalar of a run averaged over its windows: over the whole run (``run``) and over its
    second half (``late``, when the VLM mix has warmed up), from one read of its TensorBoard scalars."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    out: dict[str, dict[str, float]] = {"run": {}, "late": {}}
    for tag in acc.Tags().get("scalars", []):
        if not tag.startswith(REPLAY_PREFIX):
            continue
        by_step = {e.step: e.value for e in acc.Scalars(tag)}  # a resumed run rewrites its tail
        name = tag[len(REPLAY_PREFIX) :]
        out["run"][name] = float(sum(by_step.values()) / len(by_step))
        late = [v for step, v in by_step.items() if step >= total_steps / 2]
        if late:
            out["late"][name] = float(sum(late) / len(late))
    return out


DIAGNOSTIC_FIGURES = {
    "score_gap": ("score", "buffer_score", "difference"),
    "progress_gap": ("progress", "buffer_progress", "difference"),
    "clip_success_ratio": ("clip_success", "buffer_clip_success", "ratio"),
    "near_success_ratio": ("near_success", "buffer_near_success", "ratio"),
    "episode_success_ratio": ("episode_success", "buffer_episode_success", "ratio"),
    "age_ratio": ("age_mean", "buffer_age_mean", "ratio"),
    "demo_share_ratio": ("demo_share", "buffer_demo_share", "ratio"),
    "score_progress_rank_corr": ("score_progress_rank_corr", "", "value"),
}
"""Per run, replayed against stored (README "Diagnostics"): ``<figure>: (replayed, buffer, how)``."""


def diagnostic_figures(diagnostics: dict[str, float]) -> dict[str, float]:
    """A run's ``DIAGNOSTIC_FIGURES`` from its averaged ``replay/`` scalars (a figure it lacks is left out)."""
    figures = {}
    for figure, (replayed, stored, how) in DIAGNOSTIC_FIGURES.items():
        if replayed not in diagnostics or (stored and stored not in diagnostics):
            continue
        a, b = diagnostics[replayed], diagnostics.get(stored, 0.0)
        if how == "difference":
            figures[figure] = a - b
        elif how == "ratio" and b > 0:
            figures[figure] = a / b
        elif how == "value":
            figures[figure] = a
    return figures


def condition_of(record: dict) -> str:
    """The registered cell of a run, or (an ad-hoc grid) its name without the seed."""
    return record.get("cell") or re.sub(r"-seed\d+", "", record["name"])


def diagnostics_summary(records: list[dict], part: str = "late") -> dict[str, dict[str, float]]:
    """Per condition, each of ``DIAGNOSTIC_FIGURES`` averaged over its runs (``part``: ``run`` or ``late``),
    with ``runs`` (how many runs had diagnostics) and ``final_success`` (their mean)."""
    groups: dict[str, list[dict]] = {}
    for record in records:
        if record.get("replay", {}).get(part):
            groups.setdefault(condition_of(record), []).append(record)
    summary = {}
    for condition, rows in sorted(groups.items()):
        per_run = [diagnostic_figures(r["replay"][part]) for r in rows]
        names = [f for f in DIAGNOSTIC_FIGURES if any(f in figures for figures in per_run)]
        summary[condition] = {
            "runs": float(len(rows)),
            "final_success": float(sum(r["final_success"] for r in rows) / len(rows)),
            **{f: float(sum(x[f] for x in per_run if f in x) / sum(f in x for x in per_run)) for f in names},
        }
    return summary


def diagnostics_table(summary: dict[str, dict[str, float]]) -> str:
    """The summary as a markdown table (``-``: the condition's runs lack the figure)."""
    head = ["condition", "runs", "final success", *DIAGNOSTIC_FIGURES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for condition, f in summary.items():
        cells = [condition, f"{f['runs']:.0f}", f"{f['final_success']:.0%}"]
        cells += [f"{f[name]:.3g}" if name in f else "-" for name in DIAGNOSTIC_FIGURES]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_one(spec: RunSpec, out: Path, lock: threading.Lock, log) -> dict | None:
    """Runs one training run as a `vlmrl train` process and appends its record to the results file."""
    run_dir = out / "runs" / spec.name
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with open(run_dir.with_suffix(".log"), "a") as stdout:
        proc = subprocess.run(train_command(spec, run_dir), stdout=stdout, stderr=subprocess.STDOUT, env=env)
    add_wall_s(run_dir, time.monotonic() - started)
    if proc.returncode != 0:
        log(f"FAILED {spec.name} (exit {proc.returncode}); see {run_dir.with_suffix('.log')}")
        return None
    record = run_record(spec, run_dir)
    append_record(out, record, lock, log)
    return record


WALL_FILE = "wall_s.txt"
"""In a run directory: the seconds its training processes ran, summed over every invocation (a resumed run's
record counts the time before the interruption too; a finished run's record written again counts no more)."""


def wall_s(run_dir: Path) -> float:
    """The run's training wall-clock so far (``WALL_FILE``; 0 before any)."""
    path = run_dir / WALL_FILE
    return float(path.read_text()) if path.exists() else 0.0


def add_wall_s(run_dir: Path, seconds: float) -> float:
    """Adds ``seconds`` to the run's training wall-clock (``WALL_FILE``) and returns the total."""
    total = wall_s(run_dir) + seconds
    if run_dir.exists():
        (run_dir / WALL_FILE).write_text(f"{total:.1f}\n")
    return total


def run_record(spec: RunSpec, run_dir: Path) -> dict:
    """The results line of a finished run (read from its run directory, so on the machine that ran it);
    ``wall_s`` is its training wall-clock over every invocation (``WALL_FILE``)."""
    evals = read_evals(run_dir)
    record = {
        **asdict(spec),
        "name": spec.name,
        "evals": evals,
        "final_success": evals[-1]["success_rate"] if evals else float("nan"),
        "demo_share": mean_scalar(run_dir, "train/demo_share"),
        "replay": replay_diagnostics(run_dir, spec.total_steps),
        "wall_s": round(wall_s(run_dir), 1),
        **provenance(),
    }
    return record


def append_record(out: Path, record: dict, lock: threading.Lock, log) -> None:
    with lock, open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    log(f"done {record['name']}: final success {record['final_success']:.0%} in {record['wall_s']:.0f} s")


def train_in_ray_worker(spec: RunSpec, out: str) -> dict | str:
    """A Ray task's body: trains in the worker process itself (a reused worker imports torch and MuJoCo
    once) and returns the run's record, or the line saying why it failed. A worker that dies is replaced
    and the task retried, which resumes the run from its last checkpoint."""
    from vlmrl.cli import main as vlmrl_main

    run_dir = Path(out) / "runs" / spec.name
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log_path = run_dir.with_suffix(".log")
    with (
        open(log_path, "a") as log_file,
        contextlib.redirect_stdout(log_file),
        contextlib.redirect_stderr(log_file),
    ):
        try:
            code = vlmrl_main(train_argv(spec, run_dir))
        except SystemExit as exc:  # tyro refusing an option
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception:
            traceback.print_exc()
            code = 1
    add_wall_s(run_dir, time.monotonic() - started)
    if code:
        return f"FAILED {spec.name} (exit {code}) on {platform.node()}; see {log_path}"
    return run_record(spec, run_dir)


def run_on_ray(todo: list[RunSpec], args: argparse.Namespace, lock: threading.Lock, log) -> list[dict | None]:
    """Runs the grid as Ray tasks on the cluster at ``args.ray_address``; records are written as runs end."""
    try:
        import ray
    except ImportError:
        raise SystemExit("--ray-address needs Ray: pip install -e '.[scale]'") from None

    joined = ray.is_initialized()
    if not joined:
        local = {"num_cpus": args.workers} if args.ray_address == "local" else {}
        try:
            ray.init(address=args.ray_address, log_to_driver=False, configure_logging=False, **local)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            problem = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SystemExit(
                f"--ray-address {args.ray_address}: cannot join the Ray cluster: {problem}"
            ) from None
    log(
        f"Ray cluster: {ray.cluster_resources().get('CPU', 0):g} CPUs, {ray.cluster_resources().get('GPU', 0):g} GPUs"
    )
    task = ray.remote(train_in_ray_worker).options(
        num_cpus=args.cpus_per_run, num_gpus=args.gpus_per_run, max_retries=2
    )
    pending = {task.remote(spec, str(args.out.resolve())): spec for spec in todo}
    records: list[dict | None] = []
    try:
        while pending:
            [ref], _ = ray.wait(list(pending), num_returns=1)
            spec = pending.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayError as exc:
                result = f"FAILED {spec.name}: {str(exc).strip().splitlines()[0]}"
            if isinstance(result, str):
                log(result)
                records.append(None)
            else:
                append_record(args.out, result, lock, log)
                records.append(result)
    finally:
        if not joined:
            ray.shutdown()
    return records


def print_diagnostics(out: Path, json_path: Path | None) -> int:
    """``--diagnostics``: the per-condition table of the finished runs in ``out/results.jsonl``."""
    path = out / "results.jsonl"
    if not path.exists():
        raise SystemExit(f"--diagnostics: {path} does not exist (no finished run there)")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    summary = diagnostics_summary(records)
    if not summary:
        print(
            f"no run in {path} logged replay diagnostics (runs from before them, or too short for a window)"
        )
        return 0
    print(diagnostics_table(summary))
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(summary, indent=2))
    return 0


def finished_names(out: Path) -> set[str]:
    path = out / "results.jsonl"
    if not path.exists():
        return set()
    return {json.loads(line)["name"] for line in path.read_text().splitlines() if line.strip()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, help="results folder (default: results/replay; with --cell: results/vlm-replay)"
    )
    parser.add_argument("--tasks", nargs="+", default=["lift"], help="SO-101 twin tasks")
    parser.add_argument("--modes", nargs="+", default=["uniform", "per", "vlm", "vlm_td"])
    parser.add_argument("--noise", nargs="+", type=float, default=[0.0, 0.2, 0.4], help="oracle label noise")
    parser.add_argument("--aux-weights", nargs="+", type=float, default=[0.0, 1.0], help="vlm mode only")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--total-steps", type=int, default=30_000)
    parser.add_argument("--eval-every-steps", type=int, default=2_500)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument(
        "--demo-episodes", type=int, default=0, help="scripted-expert episodes in every run's buffer at start"
    )
    parser.add_argument(
        "--layer-norm",
        action="store_true",
        help="LayerNorm in the critics (RLPD; bounds Q with demonstrations)",
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="runs in parallel")
    parser.add_argument("--quick", action="store_true", help="one seed, noise 0.2, a short budget")
    parser.add_argument(
        "--ray-address",
        help="run each training run as a Ray task on this cluster (what `ray start --head` printed, "
        "auto: the one this machine joined, local: a new one with --workers CPUs); default: local processes",
    )
    parser.add_argument("--cpus-per-run", type=float, default=1.0, help="with --ray-address: CPUs per run")
    parser.add_argument("--gpus-per-run", type=float, default=0.0, help="with --ray-address: GPUs per run")
    parser.add_argument("--json", type=Path, help="write a summary of this invocation's runs here")
    parser.add_argument(
        "--train-arg",
        action="append",
        default=[],
        help="extra `vlmrl train` option, written --train-arg=--opt=value (repeatable); name them with --variant",
    )
    parser.add_argument(
        "--variant",
        default="",
        help="name of this invocation's --train-arg options (in run names and the table)",
    )
    parser.add_argument(
        "--scorer",
        default="scorer:oracle",
        help='the scorer of the VLM modes, as `vlmrl train` takes it, e.g. "scorer:learned --scorer.path S.pt" '
        "(default: the oracle, with --noise); name it with --variant",
    )
    parser.add_argument("--cell", help="run this registered cell of results/vlm-replay (see --list-cells)")
    parser.add_argument("--seed", type=int, help="with --cell: the seed to run")
    parser.add_argument("--dry-run", action="store_true", help="with --cell: print its commands, run nothing")
    parser.add_argument("--list-cells", action="store_true", help="print the registered cells' names")
    parser.add_argument(
        "--diagnostics",
        action="store_true",
        help="print the replay diagnostics per condition of --out's results.jsonl (second half of each run), "
        "with --json also written there; runs nothing",
    )
    args = parser.parse_args(argv)
    if args.list_cells:
        print("\n".join(CELLS))
        return 0
    if args.diagnostics:
        return print_diagnostics(args.out or Path("results/vlm-replay"), args.json)
    if args.cell is not None or args.seed is not None or args.dry_run:
        if args.cell is None or args.seed is None:
            parser.error("--cell NAME and --seed S go together (--dry-run needs both)")
        return run_cell(args.cell, args.seed, args.out or Path("results/vlm-replay"), args.dry_run)
    args.out = args.out or ROOT / "results" / "replay"
    if args.train_arg and not args.variant:
        parser.error("--train-arg needs --variant NAME: runs with other options must not share names")
    if args.scorer != "scorer:oracle" and (not args.variant or args.noise != [0.0]):
        parser.error(
            "--scorer other than the oracle needs --variant NAME and --noise 0 (noise is the oracle's)"
        )
    if args.quick:
        args.seeds, args.noise, args.aux_weights = args.seeds[:1], [0.2], [0.0]
        args.total_steps, args.eval_every_steps, args.eval_episodes = 3_000, 1_000, 5
    args.out.mkdir(parents=True, exist_ok=True)
    specs = grid(args)
    done = finished_names(args.out)
    todo = [s for s in specs if s.name not in done]
    where = f"Ray ({args.ray_address})" if args.ray_address else f"{args.workers} worker(s)"
    print(f"{len(specs)} runs in the grid, {len(specs) - len(todo)} already finished, {len(todo)} to run "
          f"on {where}; results -> {args.out / 'results.jsonl'}")  # fmt: skip
    lock = threading.Lock()

    def log(message: str) -> None:
        with lock:
            print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    started = time.monotonic()
    if args.ray_address:
        records = run_on_ray(todo, args, lock, log)
    else:
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            records = list(pool.map(lambda s: run_one(s, args.out, lock, log), todo))
    failed = sum(r is None for r in records)
    summary = {
        "runs_in_grid": len(specs),
        "runs_this_invocation": len(todo),
        "failed": failed,
        "wall_s": round(time.monotonic() - started, 1),
        "final_success": {r["name"]: r["final_success"] for r in records if r},
        "replay_diagnostics": diagnostics_summary([r for r in records if r]),
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k != "final_success"}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The held-out perturbation grid: a policy in the SO-101 twin under perturbations training never drew.

``vlmrl evaluate`` runs it on an exported policy, ``vlmrl train --evaluate-perturb`` on the final one (its
report gets the table). The grid is fixed: one row per factor the preset turns on (that factor alone), a
row with every factor at once and the nominal twin, each over the same episodes' start states (seeds above
every training and evaluation seed). Perturbations are drawn with magnitudes of 1 to 1.5 times the
preset's ranges (``sim.randomization.HELD_OUT_MAGNITUDE``) from a seed stream of their own, so a policy
trained with that preset never saw them; calibrated cameras whose files store their uncertainty get
ranges of that size, as in training.

Given a scorer, every row's episodes are also scored from the frames the perturbed twin rendered, and
the scorer's ROC-AUC is reported per row (issue #19: clip scores must not collapse under randomisation).
The windows and labels are ``vlmrl score --evaluate``'s (``vlmrl.scorers.evaluation``): a window starts at every
step and is positive when the episode's success is set by the end of the steps its score covers. A row
whose windows are all of one class (a policy that never succeeds there) has no AUC.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim.config import RandomizeConfig
from sim.factory import make_env
from sim.randomization import FACTORS, HELD_OUT_MAGNITUDE, PRESETS, Perturbation, draw, episode_generator
from vlm import scorer_prompt
from vlm.score_calibration import roc_auc
from vlmrl.errors import ConfigError
from vlmrl.scorers.evaluation import dense_windows, window_clip, window_labels

HELD_OUT_SEED_BASE = 2_000_000
"""Start states of the grid: above every training seed and apart from the training evaluation's seeds
(``vlmrl.evaluation.episodes.EVAL_SEED_BASE`` = 1,000,000)."""
HELD_OUT_SALT = 0x5EED_0E7A
"""Seed stream of the grid's perturbations (training draws with ``randomize.seed_salt``, 0 by default)."""
NOMINAL, ALL = "nominal", "all"
"""Row names besides the factors: the unperturbed twin and every factor at once."""
OVERALL = "overall (perturbed rows)"
"""The summary row pooling every perturbed row."""


@dataclass(frozen=True, kw_only=True)
class GridSpec:
    """Which grid to run (``vlmrl evaluate``'s options of the same names)."""

    perturb: str = "medium"
    """Randomisation preset whose ranges the grid goes beyond (``sim.randomization.PRESETS``)."""
    factors: tuple[str, ...] = ()
    """Factors to give a row; empty: every factor the preset turns on."""
    episodes: int = 10
    """Episodes per row (the same start states in every row)."""
    seed: int = 0
    """Picks the grid's start states and draws."""
    views: int = 4
    """Episodes per row whose first frame is kept for the picture."""
    clip_length: int = 8
    """With a scorer: frames per window."""
    clip_stride: int = 2
    """With a scorer: steps between a window's frames."""
    flag: str = "--perturb"
    """The option that named the preset, for error messages."""

    def seeds(self) -> list[int]:
        """The episodes' reset seeds, the same in every row."""
        return [HELD_OUT_SEED_BASE + 1000 * self.seed + i for i in range(self.episodes)]


@dataclass
class GridResult:
    """Per row: the summary figures, every episode (its draw included) and the kept first frames."""

    summary: dict[str, dict[str, Any]]
    rows: dict[str, list[dict[str, Any]]]
    frames: dict[str, list[np.ndarray]]


def grid_rows(spec: GridSpec) -> dict[str, Any]:
    """Row name -> the ``sim.randomization.Ranges`` it draws from (None: nominal)."""
    if spec.perturb not in PRESETS or spec.perturb == "none":
        presets = [p for p in PRESETS if p != "none"]
        raise ConfigError(f"{spec.flag} {spec.perturb!r}: unknown preset; expected one of {presets}")
    ranges = PRESETS[spec.perturb]
    unknown = [f for f in spec.factors if f not in FACTORS]
    if unknown:
        raise ConfigError(f"--factors: unknown factor(s) {unknown}; expected some of {list(FACTORS)}")
    factors = list(spec.factors) or [f for f in FACTORS if getattr(ranges, f)]
    off = [f for f in factors if not getattr(ranges, f)]
    if off:
        raise ConfigError(f"--factors {off}: preset {spec.perturb!r} does not perturb them")
    rows: dict[str, Any] = {NOMINAL: None}
    rows.update({f: ranges.only(f) for f in factors})
    rows[ALL] = ranges
    return rows


@dataclass
class ScorerView:
    """What the scorer sees of each episode: its camera at its size, every observation's frame."""

    camera: str
    size: int
    episodes: list[tuple[np.ndarray, dict[str, np.ndarray]]] = dataclasses.field(default_factory=list)
    """Per episode: frames uint8 [n + 1, H, W, 3] and per-frame info (``success``, ``progress``)."""


def run_row(
    env: Any, policy: Any, ranges: Any, seeds: list[int], views: int, scorer_view: ScorerView | None = None
) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
    """Episodes of one row: per-episode results and the first frames of the first ``views`` episodes;
    with ``scorer_view``, each episode's frames for the scorer are appended to it."""
    from sim.so101.arm import CAMERAS

    # Calibrated cameras whose files store their uncertainty get ranges of that size, as in training.
    per_camera = None if ranges is None else env.unwrapped.camera_ranges(ranges, RandomizeConfig())
    episodes, frames = [], []
    for i, seed in enumerate(seeds):
        if ranges is None:
            perturbation = Perturbation()
        else:
            rng = episode_generator(seed, HELD_OUT_SALT)
            perturbation = draw(ranges, rng, CAMERAS, HELD_OUT_MAGNITUDE, per_camera)
        obs, info = env.reset(seed=seed, options={"perturbation": perturbation})
        if i < views:
            frames.append(env.render())
        seen: list[tuple[np.ndarray, dict[str, Any]]] = []
        if scorer_view is not None:
            seen.append((env.unwrapped.sim.render(scorer_view.camera, scorer_view.size), info))
        total, steps, success, done = 0.0, 0, bool(info.get("success", False)), False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            total += float(reward)
            steps += 1
            success = success or bool(info.get("success", False))
            done = terminated or truncated
            if scorer_view is not None:
                seen.append((env.unwrapped.sim.render(scorer_view.camera, scorer_view.size), info))
        if scorer_view is not None:
            info_arrays = {
                key: np.array([float(i.get(key, 0.0)) for _, i in seen], np.float32)
                for key in ("success", "progress")
            }
            scorer_view.episodes.append((np.stack([f for f, _ in seen]), info_arrays))
        episodes.append(
            {
                "seed": seed,
                "success": success,
                "return": total,
                "steps": steps,
                "perturbation": dataclasses.asdict(perturbation),
            }
        )
    return episodes, frames


def run_grid(
    env: Any,
    policy: Callable[[dict[str, np.ndarray]], np.ndarray],
    spec: GridSpec,
    scorer: Any = None,
    scorer_kind: str = "",
    on_row: Callable[[str, list[dict[str, Any]]], None] | None = None,
    prompt: str = "",
) -> GridResult:
    """Runs every row of ``spec`` with ``policy`` in ``env`` (the SO-101 twin, perhaps wrapped).

    Args:
        env: The nominal twin the policy was trained in.
        policy: Observation -> action.
        spec: The grid.
        scorer: A ``vlm.Scorer`` to measure on each row's frames (its own camera and frame size when it
            declares them, as a learned scorer does; else the front camera at the env's image size).
        scorer_kind: Its config's ``kind`` (the prompt depends on it: ``vlm.prompts.scorer_prompt``).
        on_row: Called with each row's name and episodes as it finishes (progress lines).
        prompt: The prompt to ask the scorer with (``vlmrl.scorers.choice.ready_scorer``'s); empty: the one
            the twin's task description gives for ``scorer_kind``.

    Raises:
        ConfigError: an unknown preset or factor (one line); a scorer that refuses the frames raises its
            own one-line error.
    """
    rows_spec = grid_rows(spec)
    view = None
    if scorer is not None:
        size = env.unwrapped.cfg.image_size
        camera, hw = getattr(scorer, "camera", "front"), getattr(scorer, "image_hw", (size, size))
        # The twin's framebuffer is the policy's image size: a scorer fitted on larger frames gets those
        # (and refuses them in one line unless it may resize).
        side = min(int(hw[0]), size)
        check = getattr(scorer, "check_source", None)
        if check is not None:
            check(camera, (side, side))
        view = ScorerView(camera, side)
        prompt = prompt or scorer_prompt(env.unwrapped.task_description, scorer_kind)
    seeds = spec.seeds()
    rows, frames, aucs = {}, {}, {}
    scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, ranges in rows_spec.items():
        if view is not None:
            view.episodes = []
        rows[name], frames[name] = run_row(env, policy, ranges, seeds, spec.views, view)
        if view is not None:
            scored[name] = window_scores(scorer, prompt, view, spec.clip_length, spec.clip_stride)
            aucs[name] = auc_or_none(*scored[name])
        if on_row is not None:
            on_row(name, rows[name])
    summary = summarise(rows)
    if scorer is not None:
        perturbed = [scored[name] for name in rows if name != NOMINAL]
        aucs[OVERALL] = auc_or_none(
            np.concatenate([s for s, _ in perturbed]), np.concatenate([y for _, y in perturbed])
        )
        for name, auc in aucs.items():
            summary[name]["scorer_auc"] = auc
        summary[NOMINAL]["scorer_id"] = scorer.scorer_id
    return GridResult(summary, rows, frames)


def window_scores(
    scorer: Any, prompt: str, view: ScorerView, length: int, stride: int, batch_size: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, labels) of every window of the episodes in ``view`` (``vlmrl score --evaluate``'s windows)."""
    scores, labels = [], []
    for episode, (frames, info) in enumerate(view.episodes):
        refs = dense_windows(episode, len(frames), length, stride, f"pixels/{view.camera}")
        clips = [window_clip(frames, info, r) for r in refs]
        for i in range(0, len(clips), batch_size):
            scores.append(np.asarray(scorer.score(clips[i : i + batch_size], prompt), np.float64))
        labels.append(window_labels(info["success"], refs))
    return np.concatenate(scores or [np.zeros(0)]), np.concatenate(labels or [np.zeros(0, bool)])


def auc_or_none(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """ROC-AUC of the scores, None when the windows are all of one class."""
    labels = np.asarray(labels, bool)
    return roc_auc(scores, labels) if 0 < labels.sum() < len(labels) else None


def row_figures(episodes: list[dict[str, Any]], nominal: float) -> dict[str, Any]:
    """One row's episodes, success rate, mean return and success relative to ``nominal`` (None when 0)."""
    success = float(np.mean([e["success"] for e in episodes]))
    return {
        "episodes": len(episodes),
        "success_rate": success,
        "mean_return": float(np.mean([e["return"] for e in episodes])),
        "vs_nominal": success / nominal if nominal > 0 else None,
    }


def summarise(rows: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per row: success rate, mean return and the success relative to the nominal row's (None when the
    policy never succeeds on the nominal twin)."""
    nominal = float(np.mean([e["success"] for e in rows[NOMINAL]]))
    out = {name: row_figures(episodes, nominal) for name, episodes in rows.items()}
    perturbed = [e for name, episodes in rows.items() if name != NOMINAL for e in episodes]
    overall = float(np.mean([e["success"] for e in perturbed]))
    out[OVERALL] = {
        "episodes": len(perturbed),
        "success_rate": overall,
        "mean_return": float(np.mean([e["return"] for e in perturbed])),
        "vs_nominal": overall / nominal if nominal > 0 else None,
    }
    return out


def markdown_table(summary: dict[str, dict[str, Any]], spec: GridSpec) -> str:
    """The summary as a markdown table with a line saying what the grid was (and a scorer AUC column
    when the rows carry ``scorer_auc``)."""
    scored = any("scorer_auc" in row for row in summary.values())
    lines = [
        f"Held-out perturbation grid of preset `{spec.perturb}` (magnitudes 1-1.5x its ranges, seed "
        f"{spec.seed}, {spec.episodes} episodes per row, the same start states in every row)",
        "",
        "| perturbation | episodes | success | vs nominal | mean return |"
        + (" scorer AUC |" if scored else ""),
        "|---|---|---|---|---|" + ("---|" if scored else ""),
    ]
    for name, row in summary.items():
        ratio = "-" if row["vs_nominal"] is None else f"{row['vs_nominal']:.2f}"
        line = (
            f"| {name} | {row['episodes']:.0f} | {100 * row['success_rate']:.0f}% | {ratio} | "
            f"{row['mean_return']:.2f} |"
        )
        if scored:
            auc = row.get("scorer_auc")
            line += " - |" if auc is None else f" {auc:.3f} |"
        lines.append(line)
    if scored:
        lines += [
            "",
            f"Scorer: `{summary[NOMINAL].get('scorer_id', '?')}` on windows of {spec.clip_length} "
            f"frames {spec.clip_stride} steps apart starting at every step (- : one class only).",
        ]
    return "\n".join(lines) + "\n"


def write_views(frames: dict[str, list[np.ndarray]], path: Path, label_px: int = 150) -> Path:
    """A PNG grid: one row per perturbation row (named on the left), its episodes' first frames."""
    from PIL import Image, ImageDraw

    size = max(f.shape[0] for row in frames.values() for f in row)
    columns = max(len(row) for row in frames.values())
    grid = Image.new("RGB", (label_px + columns * (size + 2), len(frames) * (size + 2)), "white")
    draw = ImageDraw.Draw(grid)
    for r, (name, row) in enumerate(frames.items()):
        top = r * (size + 2)
        draw.text((4, top + size // 2 - 5), name, fill="black")
        for c, frame in enumerate(row):
            grid.paste(Image.fromarray(np.asarray(frame, dtype=np.uint8)), (label_px + c * (size + 2), top))
    grid.save(path)
    return path


def write_grid(
    result: GridResult, spec: GridSpec, out_dir: Path, stem: str, extra: dict[str, Any]
) -> list[Path]:
    """``<stem>.md`` (the table), ``<stem>.json`` (summary, every episode and its draw, ``extra``) and,
    with views, ``perturbed_views.png``; returns their paths."""
    table = markdown_table(result.summary, spec)
    (out_dir / f"{stem}.md").write_text(table)
    record = {
        **extra,
        "perturb": spec.perturb,
        "seed": spec.seed,
        "summary": result.summary,
        "rows": result.rows,
    }
    (out_dir / f"{stem}.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
    paths = [out_dir / f"{stem}.md", out_dir / f"{stem}.json"]
    if spec.views > 0:
        paths.append(write_views(result.frames, out_dir / "perturbed_views.png"))
    return paths


def check_train_grid(preset: str | None, suite: str) -> None:
    """``vlmrl train --evaluate-perturb``: a known preset on the SO-101 twin, checked before training."""
    if preset is None:
        return
    if suite != "so101":
        raise ConfigError(f"--evaluate-perturb runs the SO-101 twin's grid; this run trains in {suite!r}")
    grid_rows(GridSpec(perturb=preset, flag="--evaluate-perturb"))


def add_to_train_report(
    run_dir: Path, sim_cfg: Any, policy_path: Path, preset: str, episodes: int
) -> dict[str, Path]:
    """``vlmrl train --evaluate-perturb PRESET``: the final policy over the held-out grid of ``PRESET``
    (``episodes`` per row, views of 2 per row), written as ``perturbed.md``, ``perturbed.json`` and
    ``perturbed_views.png`` in the run directory, the table appended to ``report.md``."""
    from agents.export import load_policy

    spec = GridSpec(perturb=preset, episodes=episodes, views=2, flag="--evaluate-perturb")
    env = make_env(dataclasses.replace(sim_cfg, randomize=RandomizeConfig()))  # the grid draws its own
    try:
        result = run_grid(env, load_policy(policy_path), spec)
    finally:
        env.close()
    paths = write_grid(result, spec, run_dir, "perturbed", {"policy": str(policy_path)})
    report = run_dir / "report.md"
    if report.is_file():
        section = f"## Held-out perturbations (`--evaluate-perturb {preset}`)\n\n" + markdown_table(
            result.summary, spec
        )
        report.write_text(report.read_text().rstrip("\n") + "\n\n" + section)
    return {"perturbed": paths[0]}

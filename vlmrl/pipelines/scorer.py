"""`vlmrl scorer fit`: train a learned clip scorer (``scorer:learned``) on recorded episodes.

    vlmrl scorer fit runs/rec/episodes.zarr --out student.pt                       # labels: success info
    vlmrl scorer fit runs/rec/episodes.zarr --out student.pt --labels progress     # the twin's progress
    vlmrl scorer fit runs/rec/episodes.zarr --out student.pt --labels teacher \\
        teacher:oracle --teacher.noise 0.2                                          # distil a (noisy) teacher
    vlmrl scorer fit runs/rec/episodes.zarr --out student.pt \\
        --labels runs/rec/episodes.zarr.labels.json                                 # people's labels (vlmrl view)
    vlmrl train scorer:learned --scorer.path student.pt

Training clips are windows starting at every step of each episode (``vlmrl.scorers.evaluation.dense_windows``)
of one camera. Targets, by ``--labels``:

- ``success``: has the episode's success info been set by the end of the steps the window's score covers
  (the label score calibration and ``--evaluate`` use); what an operator's success/failure keys give.
- ``progress``: the twin's privileged progress at the window's last frame (what the oracle scores).
- ``teacher``: any scorer's score of the window (hf or openai on a GPU box, clip, oracle with noise).
- a labels FILE (``vlmrl view`` writes ``<store>.labels.json``; format and meaning in ``vlmrl.scorers.labels``):
  people's success/failure labels of whole episodes and step ranges replace the success info's labels of
  the episodes and windows they cover; the rest keep the success info's, and where a store has none,
  only labelled episodes (and, inside them, labelled windows) are used.

Negatives come from failed episodes and from time-reversed ("rewound") windows of successful episodes,
whose target is the label of the state their last frame shows (success info: not yet succeeded; progress:
the progress there; teacher: the teacher's score of the reversed window). Episodes are split into a
training and a held-out part; the net trains with binary cross-entropy on soft targets, random-shift
augmentation, early stopping on the held-out loss, TensorBoard under ``<run_dir>/tb``, a checkpoint per
epoch (``--resume`` continues), and ends with ``report.md`` (ROC curve, reliability diagram, scored frames
of held-out episodes). The scorer file is written last, atomically; bad input fails before anything is
written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tyro

from vlm.backends.learned import build_net, clip_frames, frames_to_input, save_learned
from vlm.config import OracleConfig
from vlm.prompts import prompt_hash, scorer_prompt
from vlm.score_calibration import best_threshold
from vlmrl.errors import ConfigError
from vlmrl.scorers.choice import ScorerChoice, ready_scorer
from vlmrl.scorers.evaluation import (
    Recording,
    dense_windows,
    figures,
    plot_roc_and_reliability,
    window_clip,
    window_labels,
)
from vlmrl.scorers.labels import labels_for_store, window_targets

TeacherChoice = ScorerChoice
"""Any backend can teach, a learned scorer included."""


@tyro.conf.configure(tyro.conf.CascadeSubcommandArgs)
@dataclass(frozen=True, kw_only=True)
class Config:
    """vlmrl scorer fit: train a learned clip scorer on recorded episodes."""

    action: Annotated[Literal["fit"], tyro.conf.Positional]
    """What to do with scorers (fit: train one)."""
    episodes: Annotated[tuple[Path, ...], tyro.conf.Positional]
    """vlmrl zarr episode stores or LeRobotDataset directories (same camera and frame size)."""
    out: Path = Path("student.pt")
    """The scorer file to write (use it with ``scorer:learned --scorer.path``)."""
    labels: Literal["success", "progress", "teacher"] | Path = "success"
    """Where targets come from: the episodes' success info, the twin's progress, ``teacher``, or a labels
    FILE written by ``vlmrl view`` (its labels replace the success info's where they cover an episode)."""
    teacher: TeacherChoice = field(default_factory=OracleConfig)
    """The scorer whose scores are the targets with ``--labels teacher``."""
    camera: str | None = None
    """Camera whose frames are scored (None: the first one recorded)."""
    prompt: str | None = None
    """The question the scorer answers; None: built from the recording's task sentence (as train does)."""
    clip_length: int = 8
    """Frames per window (as the buffer's clips)."""
    clip_stride: int = 2
    """Steps between a window's frames."""
    num_frames: int = 4
    """Frames of a window the net sees (evenly spaced, the last one always)."""
    width: int = 16
    """Channels of the first conv layer (the others have twice as many)."""
    rewound: bool = True
    """Add time-reversed windows of successful episodes as negatives."""
    holdout_fraction: float = 0.2
    """Share of episodes held out for early stopping and the report (at least one)."""
    epochs: int = 60
    """Most passes over the training windows."""
    patience: int = 10
    """Stop after this many epochs without a better held-out loss (the best net is kept)."""
    batch_size: int = 32
    """Windows per gradient step."""
    lr: float = 1e-3
    """AdamW learning rate."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    shift_px: int = 4
    """Random-shift augmentation: pad by this many pixels and crop back, one shift per window."""
    seed: int = 0
    """Seed of the split, initialisation, batches and augmentation."""
    threads: int = 1
    """torch CPU threads."""
    run_dir: Path | None = None
    """Checkpoint, TensorBoard logs and report (None: ``<out>-fit`` beside the scorer file)."""
    resume: bool = False
    """Continue from the run directory's checkpoint (same options and data)."""
    progress: bool = True
    """Show a progress bar."""


@dataclass
class Dataset:
    """Windows as the net's uint8 frames, soft targets, episode of each, and what they show."""

    frames: np.ndarray
    """uint8 [N, num_frames, H, W, 3]."""
    targets: np.ndarray
    """float32 [N] in [0, 1]."""
    episodes: np.ndarray
    """int [N] episode (index into the list of episodes over all stores)."""
    rewound: np.ndarray
    """bool [N]: a time-reversed window."""
    truth: np.ndarray
    """bool [N]: success-info label (or progress >= 0.5 without success info), for the report."""


def fit_signature(cfg: Config) -> str:
    """Hash of the options a checkpoint must share to be resumed (not run_dir, resume, progress), and of
    the labels file's contents when the labels come from one."""
    data = dataclasses.asdict(cfg)
    for key in ("resume", "progress", "run_dir", "epochs", "patience"):
        data.pop(key)
    if isinstance(cfg.labels, Path):
        data["labels_file"] = hashlib.sha256(cfg.labels.read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def open_sources(cfg: Config) -> list[Any]:
    """The episode stores, checked: they exist, share camera and frame size, and have the labels."""
    if not cfg.episodes:
        raise ConfigError("vlmrl scorer fit needs at least one EPISODES store")
    sources: list[Any] = []
    try:
        for path in cfg.episodes:
            source = Recording(path, cfg.camera)
            sources.append(source)
            need = (
                {"success": "success", "progress": "progress"}.get(cfg.labels)
                if isinstance(cfg.labels, str)
                else None
            )
            if need and need not in source.info_keys:
                raise ConfigError(
                    f"--labels {cfg.labels}: {path} stores no per-step {need} info "
                    + (
                        "(record with vlmrl record/finetune, whose success keys write it, or use --labels teacher)"
                        if need == "success"
                        else "(only twin recordings have it; use --labels success or teacher)"
                    )
                )
            if not source.episodes():
                raise ConfigError(f"{path}: no episodes")
        first = sources[0]
        hw0 = first.image_hw
        for source in sources[1:]:
            if source.camera != first.camera or source.image_hw != hw0:
                raise ConfigError(
                    f"{source.path} has camera {source.camera!r} at {source.image_hw} px, {first.path} "
                    f"{first.camera!r} at {hw0} px: fit on stores of one camera and size (--camera)"
                )
        tasks = {s.task for s in sources}
        if cfg.prompt is None and (len(tasks) != 1 or not first.task):
            raise ConfigError(
                f"the stores' task sentences {sorted(tasks)} do not name one task; pass --prompt"
            )
    except BaseException:
        for source in sources:
            source.close()
        raise
    return sources


def people_labels(cfg: Config, sources: list[Any]) -> list[dict[int, list[Any]]]:
    """Per source, episode id -> the labels file's labels of it (``--labels FILE``; empty otherwise).

    Raises:
        ConfigError: the file is malformed, names an episode a store does not hold, or leaves a store
            without success info with no labelled episode.
    """
    if not isinstance(cfg.labels, Path):
        return [{} for _ in sources]
    out = []
    for source in sources:
        by_episode: dict[int, list[Any]] = {}
        for label in labels_for_store([cfg.labels], source.path, only_store=len(sources) == 1):
            by_episode.setdefault(label.episode, []).append(label)
        known = {source.source_id(e) for e in source.episodes()}
        unknown = sorted(set(by_episode) - known)
        if unknown:
            raise ConfigError(
                f"--labels {cfg.labels}: labels episode {unknown[0]}, which {source.path} does not hold "
                f"(it has {len(known)} episodes); was the file written for another store?"
            )
        if not by_episode and "success" not in source.info_keys:
            raise ConfigError(
                f"--labels {cfg.labels}: labels none of {source.path}'s episodes, and the store has no success "
                "info to fall back on (label some in vlmrl view, or fit on the store that file is beside)"
            )
        out.append(by_episode)
    return out


def episode_windows(
    cfg: Config, refs: list[Any], n_rows: int, info: dict[str, np.ndarray], people: list[Any]
) -> list[tuple[bool, list[Any], np.ndarray | None, np.ndarray]]:
    """(rewound, windows, targets (None: the teacher scores them), truth) of one episode's windows, forward
    and, for a successful episode with ``--rewound``, time-reversed; [] for an episode nothing labels."""
    success, progress = info.get("success"), info.get("progress")
    starts = np.array([r.start for r in refs], np.int64)
    reached = np.maximum.accumulate(np.asarray(success) > 0) if success is not None else None
    if isinstance(cfg.labels, Path):  # people's labels where they cover the episode, else the success info
        base = window_labels(success, refs) if success is not None else None
        forward = window_targets(n_rows, starts, cfg.clip_length, cfg.clip_stride, people, base)
        if forward is None:
            if base is None:
                return []
            forward = base.astype(np.float32)
        out = []
        for reverse in (False, True) if cfg.rewound else (False,):
            if reverse:
                base = reached[starts] if reached is not None else None
                target = window_targets(n_rows, starts, cfg.clip_length, cfg.clip_stride, people, base, True)
                if target is None:
                    target = np.asarray(base, np.float32)
            else:
                target = forward
            keep = ~np.isnan(target)
            if reverse and not (forward[~np.isnan(forward)] >= 0.5).any():
                break  # as with success info: only successful episodes are rewound
            chosen = [r for r, k in zip(refs, keep) if k]
            if chosen:
                out.append((reverse, chosen, target[keep], target[keep] >= 0.5))
        return out
    if success is not None:
        labels = window_labels(success, refs)
        episode_ok = bool(np.any(np.asarray(success) > 0))
    else:
        labels = (
            np.array([float(progress[r.start + (r.length - 1) * r.stride]) >= 0.5 for r in refs])
            if progress is not None
            else np.zeros(len(refs), bool)
        )
        episode_ok = bool(labels.any())
    out = []
    for reverse in (False, True) if cfg.rewound and episode_ok else (False,):
        target: np.ndarray | None
        if cfg.labels == "teacher":
            target = None
        elif cfg.labels == "progress":
            idx = starts if reverse else np.array([r.start + (r.length - 1) * r.stride for r in refs])
            target = np.asarray(progress, np.float32)[idx]
        elif reverse:  # the state its last frame shows: the original first frame's
            target = reached[starts].astype(np.float32)
        else:
            target = labels.astype(np.float32)
        truth = reached[starts] if reverse and reached is not None else labels
        out.append((reverse, refs, target, np.asarray(truth, bool)))
    return out


def build_dataset(
    cfg: Config,
    sources: list[Any],
    prompt: str,
    teacher: Any,
    people: list[dict[int, list[Any]]] | None = None,
) -> Dataset:
    """Every window (and rewound window) of every episode with its target; ConfigError when the targets
    are all of one class. ``people``: per source, episode id -> labels (``people_labels``)."""
    people = people or [{} for _ in sources]
    frames, targets, episodes, rewound, truth = [], [], [], [], []
    index = 0
    for source, labelled in zip(sources, people):
        for episode in source.episodes():
            ep_frames, info = source.arrays(episode)
            refs = dense_windows(episode, len(ep_frames), cfg.clip_length, cfg.clip_stride, source.camera)
            chosen = episode_windows(
                cfg, refs, len(ep_frames), info, labelled.get(source.source_id(episode), [])
            )
            for reverse, windows, target, truth_of in chosen:
                clips = [window_clip(ep_frames, info, r, reverse=reverse) for r in windows]
                if target is None:
                    target = np.asarray(teacher.score(clips, prompt), np.float32)
                frames.append(np.stack([clip_frames(c, cfg.num_frames) for c in clips]))
                targets.append(np.clip(target, 0.0, 1.0))
                episodes.append(np.full(len(clips), index))
                rewound.append(np.full(len(clips), reverse))
                truth.append(np.asarray(truth_of, bool))
            index += 1
    if not frames:
        raise ConfigError(f"--labels {cfg.labels}: no labelled windows to fit on")
    data = Dataset(
        np.concatenate(frames),
        np.concatenate(targets).astype(np.float32),
        np.concatenate(episodes),
        np.concatenate(rewound),
        np.concatenate(truth),
    )
    hard = data.targets >= 0.5
    if hard.all() or not hard.any():
        raise ConfigError(
            f"all {len(hard)} windows have {'positive' if hard.all() else 'negative'} targets (--labels "
            f"{cfg.labels}); a scorer needs both: record failed and successful episodes"
            + (" (or label both kinds in vlmrl view)" if isinstance(cfg.labels, Path) else "")
        )
    return data


def split_episodes(data: Dataset, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train mask, held-out mask) by episode: the held-out part takes successful and failed episodes
    in proportion, at least one episode, and never all of them."""
    rng = np.random.default_rng(seed)
    episodes = np.unique(data.episodes)
    if len(episodes) < 2:
        raise ConfigError(f"{len(episodes)} episode(s): fitting needs at least 2 (one is held out)")
    ok = np.array([data.truth[(data.episodes == e) & ~data.rewound].any() for e in episodes])
    held: list[int] = []
    for group in (episodes[ok], episodes[~ok]):
        n = max(1, round(fraction * len(group))) if len(group) >= 2 else 0
        held += rng.permutation(group)[:n].tolist()
    if not held:
        held = [int(rng.choice(episodes))]
    if len(held) == len(episodes):
        held = held[:-1]
    heldout = np.isin(data.episodes, held)
    return ~heldout, heldout


def shift(frames: Any, pad: int, generator: Any) -> Any:
    """Random-shift augmentation (DrQ): pad by ``pad`` (edge) and crop back, one shift per window."""
    import torch
    import torch.nn.functional as F

    if pad <= 0:
        return frames
    b, f, h, w, c = frames.shape
    x = frames.permute(0, 1, 4, 2, 3).reshape(b, f * c, h, w).float()
    x = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    dy = torch.randint(0, 2 * pad + 1, (b,), generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (b,), generator=generator)
    out = torch.stack([x[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(b)])
    return out.reshape(b, f, c, h, w).permute(0, 1, 3, 4, 2).to(torch.uint8)


def predict(net: Any, frames: np.ndarray, batch_size: int = 128) -> np.ndarray:
    """Sigmoid scores of uint8 [N, F, H, W, 3] windows."""
    import torch

    out = np.empty(len(frames), np.float32)
    with torch.inference_mode():
        for i in range(0, len(frames), batch_size):
            x = frames_to_input(torch.from_numpy(frames[i : i + batch_size]))
            out[i : i + len(x)] = torch.sigmoid(net(x)[:, 0]).numpy()
    return out


def bce(net: Any, frames: np.ndarray, targets: np.ndarray) -> float:
    """Mean binary cross-entropy of the net on windows (no augmentation)."""
    p = np.clip(predict(net, frames).astype(np.float64), 1e-6, 1 - 1e-6)
    t = targets.astype(np.float64)
    return float(-np.mean(t * np.log(p) + (1 - t) * np.log1p(-p)))


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Atomic torch.save (temporary file, then rename)."""
    import torch

    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train(
    cfg: Config, data: Dataset, train_mask: np.ndarray, held_mask: np.ndarray, run_dir: Path, signature: str
) -> tuple[Any, dict[str, Any]]:
    """The training loop with early stopping; returns the best net (by held-out loss) and the history."""
    import torch
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from torch.utils.tensorboard import SummaryWriter

    torch.manual_seed(cfg.seed)
    net = build_net(cfg.num_frames, cfg.width)
    optim = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    generator = torch.Generator().manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    ckpt_path = run_dir / "checkpoint.pt"
    epoch, best_loss, best_state, since_best, history = 0, float("inf"), None, 0, []
    if cfg.resume and ckpt_path.is_file():
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        if ckpt["signature"] != signature:
            raise ConfigError(f"--resume: {ckpt_path} was written with other options or data; drop --resume")
        net.load_state_dict(ckpt["net"])
        optim.load_state_dict(ckpt["optim"])
        generator.set_state(ckpt["generator"])
        rng.bit_generator.state = ckpt["rng"]
        epoch, best_loss, best_state = ckpt["epoch"], ckpt["best_loss"], ckpt["best_state"]
        since_best, history = ckpt["since_best"], ckpt["history"]
    train_idx = np.nonzero(train_mask)[0]
    x_train, y_train = data.frames, torch.from_numpy(data.targets)
    x_held, y_held = data.frames[held_mask], data.targets[held_mask]
    writer = SummaryWriter(str(run_dir / "tb"), purge_step=epoch or None)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    try:
        bar = Progress(
            TextColumn("[bold]scorer fit"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("epochs, held-out loss {task.fields[loss]} (best {task.fields[best]})"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            disable=not cfg.progress,
        )
        task = bar.add_task("fit", total=cfg.epochs, completed=epoch, loss="-", best="-")
        with bar:
            while epoch < cfg.epochs and since_best < cfg.patience:
                net.train()
                order = rng.permutation(train_idx)
                losses = []
                for i in range(0, len(order), cfg.batch_size):
                    idx = order[i : i + cfg.batch_size]
                    frames = shift(torch.from_numpy(x_train[idx]), cfg.shift_px, generator)
                    loss = loss_fn(net(frames_to_input(frames))[:, 0], y_train[idx])
                    optim.zero_grad()
                    loss.backward()
                    optim.step()
                    losses.append(loss.item())
                net.eval()
                held_loss = bce(net, x_held, y_held)
                epoch += 1
                if held_loss < best_loss - 1e-4:
                    best_loss, since_best = held_loss, 0
                    best_state = {k: v.clone() for k, v in net.state_dict().items()}
                else:
                    since_best += 1
                history.append(
                    {"epoch": epoch, "train_loss": float(np.mean(losses)), "heldout_loss": held_loss}
                )
                writer.add_scalar("fit/train_loss", history[-1]["train_loss"], epoch)
                writer.add_scalar("fit/heldout_loss", held_loss, epoch)
                save_checkpoint(
                    ckpt_path,
                    {
                        "signature": signature,
                        "net": net.state_dict(),
                        "optim": optim.state_dict(),
                        "generator": generator.get_state(),
                        "rng": rng.bit_generator.state,
                        "epoch": epoch,
                        "best_loss": best_loss,
                        "best_state": best_state,
                        "since_best": since_best,
                        "history": history,
                    },
                )
                bar.update(task, completed=epoch, loss=f"{held_loss:.3f}", best=f"{best_loss:.3f}")
    finally:
        writer.close()
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return net, {"epochs": epoch, "best_heldout_loss": best_loss, "history": history}


def write_report(
    run_dir: Path, cfg: Config, data: Dataset, held: np.ndarray, scores: np.ndarray, summary: dict[str, Any]
) -> None:
    """report.md with the held-out figures, roc.png, reliability.png and frames.png (scored windows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    truth = data.truth[held]
    plots = plot_roc_and_reliability(run_dir, {"held-out (forward and rewound)": (scores, truth)})
    rng = np.random.default_rng(0)
    picks = rng.choice(len(scores), size=min(8, len(scores)), replace=False)
    fig, axes = plt.subplots(1, len(picks), figsize=(2 * len(picks), 2.4))
    for ax, i in zip(np.atleast_1d(axes), picks):
        ax.imshow(data.frames[held][i, -1])
        kind = "rewound" if data.rewound[held][i] else "forward"
        ax.set_title(f"{scores[i]:.2f} ({'success' if truth[i] else 'not yet'})\n{kind}", fontsize=7)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(run_dir / "frames.png", dpi=100)
    plt.close(fig)
    f = summary["heldout"]
    lines = [
        f"# Learned scorer `{cfg.out}`",
        "",
        f"Fitted on {summary['train_windows']} windows of {summary['train_episodes']} episodes "
        f"({', '.join(str(p) for p in cfg.episodes)}, camera `{summary['camera']}`, "
        f"{summary['image_hw'][0]}x{summary['image_hw'][1]} px), labels: {summary['labels']}; "
        f"{summary['epochs']} epochs.",
        "",
        f"Held out: {f['windows']} windows of {summary['heldout_episodes']} episodes, against their "
        "success labels (rewound windows included):",
        "",
        "| ROC-AUC | accuracy (threshold) | ECE |",
        "|---|---|---|",
        f"| {f['auc']:.3f} | {f['accuracy']:.3f} ({f['threshold']:.2f}) | {f['ece']:.3f} |",
        "",
        *[f"![{p}]({p})" for p in plots],
        "",
        "Last frames of a few held-out windows with their scores:",
        "",
        "![frames](frames.png)",
    ]
    (run_dir / "report.md").write_text("\n".join(lines) + "\n")
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")


def main(cfg: Config) -> int:
    """Fit and write the scorer file; returns 0."""
    import torch

    for name in ("clip_length", "clip_stride", "num_frames", "width", "epochs", "batch_size", "threads"):
        if getattr(cfg, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
    if not 0.0 < cfg.holdout_fraction < 1.0:
        raise ConfigError(f"--holdout-fraction must be in (0, 1), got {cfg.holdout_fraction}")
    if not cfg.out.parent.is_dir():
        raise ConfigError(f"--out {cfg.out}: directory {cfg.out.parent} does not exist")
    torch.set_num_threads(cfg.threads)
    sources = open_sources(cfg)
    teacher = None
    try:
        prompt = cfg.prompt or scorer_prompt(sources[0].task, "learned")  # the prompt train will ask
        if cfg.labels == "teacher":
            teacher, _ = ready_scorer(cfg.teacher)  # one line if unreachable; asked the student's prompt
        camera, image_hw = sources[0].camera, sources[0].image_hw
        data = build_dataset(cfg, sources, prompt, teacher, people_labels(cfg, sources))
        teacher_id = teacher.scorer_id if teacher is not None else None
    finally:
        if teacher is not None:
            teacher.close()
        for source in sources:
            source.close()
    train_mask, held_mask = split_episodes(data, cfg.holdout_fraction, cfg.seed)
    run_dir = cfg.run_dir or cfg.out.with_name(f"{cfg.out.stem}-fit")
    signature = fit_signature(cfg)
    if not cfg.resume and (run_dir / "checkpoint.pt").exists():
        raise ConfigError(
            f"{run_dir} holds a fit already: pass --resume to continue it, or another --run-dir"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2, default=str) + "\n")
    net, result = train(cfg, data, train_mask, held_mask, run_dir, signature)
    scores = predict(net, data.frames[held_mask])
    truth = data.truth[held_mask]
    threshold = best_threshold(scores, truth)
    heldout = {"windows": int(held_mask.sum()), **figures(scores, truth, threshold)}
    if isinstance(cfg.labels, Path):
        labels = f"file {cfg.labels}"
    else:
        labels = f"teacher {teacher_id}" if cfg.labels == "teacher" else cfg.labels
    summary = {
        "camera": camera,
        "image_hw": list(image_hw),
        "labels": labels,
        "train_windows": int(train_mask.sum()),
        "train_episodes": len(np.unique(data.episodes[train_mask])),
        "heldout_episodes": len(np.unique(data.episodes[held_mask])),
        "heldout": heldout,
        **result,
    }
    write_report(run_dir, cfg, data, held_mask, scores, summary)
    meta = {
        "camera": camera,
        "image_hw": list(image_hw),
        "num_frames": cfg.num_frames,
        "width": cfg.width,
        "prompt": prompt,
        "prompt_hash": prompt_hash(prompt),
        "labels": labels,
        "threshold": threshold,
        "clip_length": cfg.clip_length,
        "clip_stride": cfg.clip_stride,
        "episodes": [str(p) for p in cfg.episodes],
        "heldout_auc": float(heldout["auc"]),
    }
    save_learned(cfg.out, net, meta)
    print(
        f"scorer fit: {cfg.out} (held-out AUC {heldout['auc']:.3f}, accuracy {heldout['accuracy']:.3f} at "
        f"{heldout['threshold']:.2f}, ECE {heldout['ece']:.3f}); report {run_dir / 'report.md'}"
    )
    return 0

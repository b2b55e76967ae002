"""LeRobotDataset <-> replay buffer: import recorded robot episodes (v2.1 or v3.0) to score and train on
them, export buffer episodes as a LeRobotDataset v3.0.

Name mapping: `observation.state` <-> `state`, `observation.images.<cam>` <-> `pixels/<cam>`, other
`observation.<key>` <-> `<key>`, `action`, `next.reward` <-> `reward`, `next.done`/`next.truncated`,
`info.<key>` <-> `info/<key>` (a native `next.success` becomes `info/success`, shifted to the frame it
describes; the last frame's, whose transition is dropped, goes to the final observation). A LeRobot frame carries an action; its last frame has no successor, so on import the last
frame becomes the episode's final observation and its action/reward are dropped (T frames -> T - 1
transitions). Export writes all T + 1 rows, the final one with `next.done` set and the last
transition's action repeated: actions are (absolute) targets, so the final frame says "hold the last
target" (a zero action would mean "go to 0 degrees", which behaviour cloning would learn). Import drops
that row's action again, so import(export(x)) gives x back (frames through the video codec, so up to its
loss).

Export follows LeRobot's conventions so its own tools consume the result: `action` and every vector
feature carry `names` (LeRobot's replay loop maps `features["action"]["names"]` to motor commands;
`action_names` should be the robot's action keys), `robot_type` is set, and per-motor observation keys
(`<motor>.pos`, shape (1,), as `LeRobotEnv` gives them) become one `observation.state` vector named by
them (import splits it back when the buffer stores those keys); a `state` beside them (the twin's state
vector in a recording of the twin) is `observation.environment_state`, imported back as `state`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from buffer.errors import BufferError
from buffer.io.lerobot_format import LeRobotEpisode, LeRobotReader
from buffer.replay_buffer import ReplayBuffer

_BOOKKEEPING = {"timestamp", "frame_index", "episode_index", "index", "task_index"}
_HANDLED = {"action", "next.reward", "next.done", "next.truncated", "next.success"}


def _obs_key(feature: str, features: dict | None = None) -> str | None:
    """Buffer observation key of a LeRobot feature (None: not an observation). Beside an
    `observation.state` of motor keys (split into them), `observation.environment_state` is `state`."""
    if feature == "observation.environment_state" and features is not None:
        state = features.get("observation.state")
        if state is not None and _motor_names(state):
            return "state"
    if feature.startswith("observation.images."):
        return "pixels/" + feature[len("observation.images.") :]
    if feature == "observation.image":
        return "pixels/image"
    if feature == "observation.state":
        return "state"
    if feature.startswith("observation."):
        return feature[len("observation.") :]
    return None


def _motor_names(feature: dict) -> list[str] | None:
    """The names of an `observation.state` that holds one LeRobot motor key (`<motor>.pos`) per entry."""
    names = feature.get("names")
    if isinstance(names, dict):  # older datasets: {"motors": [...]}
        names = next(iter(names.values()), None)
    motor_keys = isinstance(names, list) and all(isinstance(n, str) and n.endswith(".pos") for n in names)
    if motor_keys and names and len(names) == int(np.prod(feature["shape"])):
        return list(names)
    return None


def lerobot_spec(
    root: str | Path,
) -> tuple[dict[str, tuple[tuple[int, ...], np.dtype]], int, tuple[str, ...]]:
    """(obs_spec, action_dim, info_keys) of a LeRobotDataset, to build a buffer it can be imported into.

    An `observation.state` named by LeRobot motor keys (`shoulder_pan.pos`, ...) becomes one (1,)
    observation per motor, as `LeRobotEnv` observes a robot; another `observation.state` is `state`."""
    reader = LeRobotReader(root)
    obs_spec: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for name, feature in reader.features.items():
        key = _obs_key(name, reader.features)
        if key is None:
            continue
        motors = _motor_names(feature) if name == "observation.state" else None
        if motors:
            obs_spec.update({m: ((1,), np.dtype(np.float32)) for m in motors})
            continue
        shape = tuple(int(s) for s in feature["shape"])
        if feature["dtype"] in ("video", "image"):
            if feature.get("names") and list(feature["names"])[:1] == ["channels"]:
                shape = (shape[1], shape[2], shape[0])
            obs_spec[key] = (shape, np.dtype(np.uint8))
        else:
            obs_spec[key] = (shape, np.dtype(np.float32))
    if "action" not in reader.features:
        raise BufferError(f"{root}: the dataset has no 'action' feature")
    action_dim = int(np.prod(reader.features["action"]["shape"]))
    info_keys = [n[len("info.") :] for n in reader.features if n.startswith("info.")]
    if "next.success" in reader.features and "success" not in info_keys:
        info_keys.append("success")
    return obs_spec, action_dim, tuple(info_keys)


def import_lerobot(
    root: str | Path,
    buffer: ReplayBuffer,
    skipped: dict[int, str] | None = None,
    imported: list[int] | None = None,
) -> int:
    """Add every episode of a local LeRobotDataset directory to `buffer`; returns episodes added.

    Args:
        skipped: when given, episodes whose files are missing or unreadable are left out and recorded
            here (dataset episode index -> problem); otherwise the first one raises.
        imported: when given, the dataset episode index of each episode added, in order (buffer episode
            ids count from the buffer's own first id, and skipped episodes leave gaps in the dataset's).

    Raises:
        BufferError: unreadable dataset, or features that do not match the buffer's arrays.
    """
    reader = LeRobotReader(root)
    added = 0
    for episode in reader.episodes(skipped):
        if episode.length < 2:
            warnings.warn(
                f"{root}: episode {episode.index} has {episode.length} frame(s); skipped", stacklevel=2
            )
            continue
        _add(buffer, episode, reader, root)
        added += 1
        if imported is not None:
            imported.append(episode.index)
    return added


def _add(buffer: ReplayBuffer, episode: LeRobotEpisode, reader: LeRobotReader, root: str | Path) -> None:
    cols = episode.columns
    t = episode.length - 1  # transitions
    obs = {}
    for name in cols:
        key = _obs_key(name, reader.features)
        motors = _motor_names(reader.features[name]) if name == "observation.state" else None
        if motors and all(m in buffer.storage.specs for m in motors):
            values = cols[name].reshape(episode.length, len(motors))
            obs.update({m: values[:, i : i + 1] for i, m in enumerate(motors)})
        elif key is not None:
            frames = cols[name]
            if reader.features[name]["dtype"] in ("video", "image"):
                obs[key] = frames.astype(np.uint8)
            else:
                obs[key] = (
                    frames.reshape(episode.length, *buffer.storage.specs[key].shape)
                    if key in buffer.storage.specs
                    else frames
                )
    missing = [k for k in buffer.obs_keys if k not in obs]
    if missing:
        raise BufferError(f"{root}: episode {episode.index} lacks observations {missing} the buffer stores")
    zeros = np.zeros(episode.length)
    done = cols.get("next.done", zeros).reshape(-1).astype(bool)
    trunc = cols.get("next.truncated", zeros).reshape(-1).astype(bool)
    terminated = done[:t] & ~trunc[:t]
    terminated[-1] |= done[t] & ~trunc[t]
    truncated = np.zeros(t, bool)
    truncated[-1] = not terminated[-1]
    info = {}
    for key in buffer.info_keys:
        if f"info.{key}" in cols:
            info[key] = cols[f"info.{key}"].reshape(-1)
        elif key == "success" and "next.success" in cols:
            success = cols["next.success"].reshape(-1).astype(np.float64)
            info[key] = np.concatenate([[0.0], success[:t]])
            # LeRobot's recorders often mark success on the last frame only; its transition is dropped,
            # so the final observation carries it (as terminated does above).
            info[key][-1] = max(info[key][-1], success[t])
    buffer.add_episode(
        {k: v for k, v in obs.items() if k in buffer.obs_keys},
        cols["action"].reshape(episode.length, -1)[:t],
        cols.get("next.reward", zeros).reshape(-1)[:t],
        terminated,
        truncated,
        info,
    )


def export_lerobot(
    buffer: ReplayBuffer,
    root: str | Path,
    *,
    fps: int,
    task: str = "",
    repo_id: str = "local/vlmrl-export",
    episodes: Sequence[int] | None = None,
    vcodec: str = "libsvtav1",
    robot_type: str | None = None,
    action_names: Sequence[str] | None = None,
    state_names: Sequence[str] | None = None,
    skipped: dict[int, str] | None = None,
) -> int:
    """Write live buffer episodes (all, or `episodes`) as a LeRobotDataset v3.0 at `root` (must not exist).

    Uses lerobot's own writer (lerobot 0.4.x), so the result loads with `LeRobotDataset`; feature names,
    robot type and the final frame's action follow LeRobot's conventions (module docstring). Returns the
    number of episodes written. Every row of an episode is read (frames checked against their
    checksums) before any of it is written: with `skipped` given, a damaged episode is left out and
    recorded there (episode -> problem); without it, it stops the export with its name.

    `state_names` name the values of the buffer's `state` (a recording's ``state_names``). Per-motor keys
    (`shoulder_pan.pos` ...) form `observation.state`, named by them; beside them `state` is
    `observation.environment_state` (LeRobot's name for a simulator's state), unless it is named as those
    motor keys (a real arm's `state` holds the same values; it is left out).

    Raises:
        BufferError: lerobot is not importable, `root` exists, `action_names` do not fit the actions,
            `state_names` do not fit `state`, or an episode's data is damaged.
    """
    try:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
    except ImportError as exc:
        raise BufferError(f"export to LeRobotDataset needs lerobot (pip install lerobot): {exc}") from None
    if Path(root).exists():
        raise BufferError(f"{root}: already exists; export writes a new dataset")
    specs = buffer.storage.specs
    action_dim = int(np.prod(specs["action"].shape))
    names_of_action = list(action_names) if action_names else [f"action_{i}" for i in range(action_dim)]
    if len(names_of_action) != action_dim:
        raise BufferError(
            f"export: {len(names_of_action)} action names {names_of_action} for {action_dim} actions"
        )
    motors = [
        k for k in buffer.obs_keys if k.endswith(".pos") and specs[k].shape == (1,) and not specs[k].is_frame
    ]
    if set(motors) <= set(names_of_action):  # the robot's own joint order, as its actions name them
        motors.sort(key=names_of_action.index)
    if state_names is not None and "state" in specs:
        state_names = list(state_names)
        if len(state_names) != int(np.prod(specs["state"].shape or (1,))):
            raise BufferError(
                f"export: {len(state_names)} state names {state_names} for 'state' {specs['state'].shape}"
            )
    features: dict[str, dict] = {}
    names: dict[str, str] = {}
    for key in buffer.obs_keys:
        spec = specs[key]
        if key in motors or (key == "state" and motors and state_names == motors):
            continue
        if spec.is_frame:
            name = "observation.images." + key[len("pixels/") :]
            features[name] = {"dtype": "video", "shape": spec.shape, "names": ["height", "width", "channels"]}
        else:
            size = int(np.prod(spec.shape or (1,)))
            if key == "state":
                name = "observation.environment_state" if motors else "observation.state"
                entry_names = state_names or [f"{key}_{i}" for i in range(size)]
            else:
                name = "observation." + key
                entry_names = [key] if size == 1 else [f"{key}_{i}" for i in range(size)]
            features[name] = {"dtype": "float32", "shape": spec.shape or (1,), "names": entry_names}
        names[key] = name
    if motors:
        features["observation.state"] = {"dtype": "float32", "shape": (len(motors),), "names": motors}
    features["action"] = {"dtype": "float32", "shape": specs["action"].shape, "names": names_of_action}
    for name, dtype in (("next.reward", "float32"), ("next.done", "bool"), ("next.truncated", "bool")):
        features[name] = {"dtype": dtype, "shape": (1,), "names": None}
    for key in buffer.info_keys:
        features[f"info.{key}"] = {"dtype": "float32", "shape": (1,), "names": None}
    table = buffer.storage.episodes()
    chosen = list(range(table.first, table.first + table.count)) if episodes is None else list(episodes)
    with _quiet_encoders():
        dataset = LeRobotDataset.create(
            repo_id,
            fps,
            features,
            root=root,
            robot_type=robot_type,
            use_videos=True,
            vcodec=vcodec,
            encoder_threads=1,
        )
        written = 0
        for e in chosen:
            start, end = buffer.episode_rows(e)
            rows = np.arange(start, end)
            try:
                read = {name: buffer.storage.read(name, rows) for name in specs}
            except BufferError as exc:
                if skipped is None:
                    raise
                skipped[e] = str(exc)
                continue
            for i in range(len(rows)):
                last = i == len(rows) - 1
                j = i - 1 if last else i  # the final row: the last transition's action and end flags
                frame = {names[k]: read[k][i].reshape(features[names[k]]["shape"]) for k in names}
                if motors:
                    frame["observation.state"] = np.array([read[m][i][0] for m in motors], np.float32)
                frame["action"] = read["action"][j].astype(np.float32)
                frame["next.reward"] = np.array([read["reward"][i]], np.float32)
                frame["next.done"] = np.array([bool(read["terminated"][j] or read["truncated"][j])])
                frame["next.truncated"] = np.array([bool(read["truncated"][j])])
                for key in buffer.info_keys:
                    frame[f"info.{key}"] = np.array([read[f"info/{key}"][i]], np.float32)
                frame["task"] = task
                dataset.add_frame(frame)
            dataset.save_episode()
            written += 1
        if chosen and not written:
            raise BufferError(f"export to {root}: no intact episode to write")
        dataset.finalize()
    _remove_empty_dirs(Path(root) / "images")  # lerobot's frame staging area, emptied after encoding
    return written


@contextlib.contextmanager
def _quiet_encoders() -> Iterator[None]:
    """Keep the video encoder's banner (SVT-AV1 prints ~25 lines per episode), FFmpeg's muxer notes and
    the datasets progress bars off the terminal while exporting; warnings and errors still show."""
    import av.logging
    import datasets

    svt_before = os.environ.get("SVT_LOG")
    os.environ["SVT_LOG"] = "1"  # SVT-AV1 reads it when an encoder starts: 1 = errors only
    # lerobot hands FFmpeg's log back to FFmpeg's own printer after each video; its threshold decides.
    av.logging.set_libav_level(av.logging.ERROR)
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if svt_before is None:
            os.environ.pop("SVT_LOG", None)
        else:
            os.environ["SVT_LOG"] = svt_before
        av.logging.set_libav_level(av.logging.INFO)  # FFmpeg's default threshold
        if bars:
            datasets.enable_progress_bars()


def _remove_empty_dirs(path: Path) -> None:
    """Remove `path` if it holds no files (only empty folders)."""
    if path.is_dir() and not any(p.is_file() for p in path.rglob("*")):
        shutil.rmtree(path)

"""An episode store's metadata, read and validated in one place.

A vlmrl zarr store keeps its metadata in the root group's ``zarr.json`` (zarr v3):
``attributes.vlmrl_buffer`` (schema version, capacity, per-row array specs, frame codec and, for the
lossy ``jpeg``, its ``frame_quality``, the env spec the buffer was built for: ``obs_spec``,
``action_dim``, ``info_keys``) and, for recordings, ``attributes.vlmrl_record``
(task description, control rate, robot and sim settings). Pipelines read it through
``read_store_metadata`` instead of parsing attributes by hand, so every malformed store (truncated
JSON, another zarr format, a schema version that is not a number, missing keys, a field of the wrong
type or value, fields that disagree) fails with one ``BufferError`` line naming the file, the field and
its value, before any array but ``episode_ends`` is read. The schema itself, which ``ZarrStorage``
also checks whenever it opens a store, is ``buffer.storage.metadata_schema``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buffer.errors import BufferError
from buffer.spec import ObsSpec
from buffer.storage.metadata_schema import (
    ROOT_FILE,
    LocalReader,
    check_episode_ends,
    read_episode_ends,
    validate_store,
)


@dataclass(frozen=True, kw_only=True)
class StoreMetadata:
    """What a vlmrl episode store says about itself."""

    path: Path
    """The store's directory."""
    schema_version: int
    """Version of the on-disk layout (``buffer.spec.SCHEMA_VERSION`` when written by this code)."""
    capacity: int
    """Rows the store's ring holds."""
    obs_spec: ObsSpec
    """Observation key -> (per-row shape, dtype), as the env declared it."""
    action_dim: int
    """Length of one action."""
    info_keys: tuple[str, ...]
    """Per-step info values stored as ``info/<key>`` (``success``, ``progress``, ...)."""
    record: dict[str, Any] = field(default_factory=dict)
    """The ``vlmrl_record`` attributes of a recording (empty for a training buffer)."""
    frame_codec: str = "none"
    """How frames are encoded (``BufferConfig.frame_codec``); ``jpeg`` is lossy."""
    frame_quality: int | None = None
    """JPEG quality of a lossy ``frame_codec``; None for lossless codecs."""

    @property
    def cameras(self) -> list[str]:
        """Camera names of the stored ``pixels/<camera>`` keys, in store order."""
        return [k.removeprefix("pixels/") for k in self.obs_spec if k.startswith("pixels/")]

    @property
    def task_description(self) -> str:
        """The recorded task sentence (the source of prompts), empty when none was stored."""
        value = self.record.get("task_description", "")
        return value if isinstance(value, str) else ""

    @property
    def control_hz(self) -> float | None:
        """The recorded control rate, None when none was stored."""
        value = self.record.get("control_hz")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def is_zarr_store(path: Path | str) -> bool:
    """Whether ``path`` is a directory with a zarr v3 root file (it may still be malformed)."""
    return (Path(path) / ROOT_FILE).is_file()


def read_store_metadata(path: Path | str) -> StoreMetadata:
    """Read and validate a vlmrl zarr store's metadata: every metadata file of the store against its
    schema (``buffer.storage.metadata_schema``), and the commit record against ``episode_ends`` (the only
    array read).

    Raises:
        BufferError: one line naming the file, the field and its value: a missing or unreadable
            ``zarr.json``, invalid (e.g. truncated) JSON, a ``zarr_format`` other than 3, a node that is
            not a group, a group that is not a vlmrl store, a ``schema_version`` that is not an integer or
            is newer than this code reads, and any field of the schema missing, mistyped, out of range or
            inconsistent with another.
    """
    root = Path(path)
    layout = validate_store(LocalReader(root))
    if layout is None:
        raise BufferError(
            f"{root}: a zarr group that is not a vlmrl episode store (no vlmrl_buffer attribute)"
        )
    check_episode_ends(layout, read_episode_ends(root, layout))  # the commit record against what was written
    return StoreMetadata(
        path=root,
        schema_version=layout.schema_version,
        capacity=layout.capacity,
        obs_spec=layout.obs_spec,
        action_dim=layout.action_dim,
        info_keys=layout.info_keys,
        record=dict(layout.record),
        frame_codec=layout.frame_codec,
        frame_quality=layout.frame_quality,
    )

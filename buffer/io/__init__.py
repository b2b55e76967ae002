"""Dataset I/O: LeRobotDataset (v2.1, v3.0) import and export; recorded stores opened for reading."""

from buffer.io.lerobot import export_lerobot, import_lerobot, lerobot_spec
from buffer.io.lerobot_format import LeRobotReader
from buffer.io.recorded import open_recorded

__all__ = ["LeRobotReader", "export_lerobot", "import_lerobot", "lerobot_spec", "open_recorded"]

"""Dataset I/O: LeRobotDataset (v2.1, v3.0) import and export."""

from buffer.io.lerobot import export_lerobot, import_lerobot, lerobot_spec
from buffer.io.lerobot_format import LeRobotReader

__all__ = ["LeRobotReader", "export_lerobot", "import_lerobot", "lerobot_spec"]

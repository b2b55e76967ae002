"""Pictures that show a user which calibration images were good: detected corners and per-image error."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from calibration.intrinsics import ImageReport

_GREEN, _RED, _ORANGE = (40, 180, 40), (220, 40, 40), (240, 150, 0)


def plot_detections(
    images: Sequence[np.ndarray], reports: Sequence[ImageReport], path: Path, thumb_width: int = 320
) -> Path:
    """Writes a PNG grid of thumbnails with detected corners; a red frame and the reason mark rejects."""
    tiles = []
    for image, report in zip(images, reports):
        rgb = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB) if image.ndim == 2 else image.copy()
        scale = thumb_width / rgb.shape[1]
        tile = cv2.resize(
            rgb, (thumb_width, max(1, round(rgb.shape[0] * scale))), interpolation=cv2.INTER_AREA
        )
        colour = _GREEN if report.accepted else _RED
        if report.detection is not None:
            for x, y in report.detection.corners_px * scale:
                cv2.circle(tile, (round(x), round(y)), 2, _GREEN if report.accepted else _ORANGE, -1)
            first = report.detection.corners_px[0] * scale
            cv2.circle(tile, (round(first[0]), round(first[1])), 5, (0, 90, 255), 2)
        label = (
            f"{report.name}: {report.rms_px:.2f} px" if report.accepted else f"{report.name}: {report.reason}"
        )
        cv2.rectangle(tile, (0, 0), (tile.shape[1] - 1, tile.shape[0] - 1), colour, 4)
        cv2.rectangle(tile, (0, 0), (tile.shape[1] - 1, 18), (0, 0, 0), -1)
        cv2.putText(tile, label[:48], (4, 13), cv2.FONT_HERSHEY_SIMPLEX, 0.4, colour, 1, cv2.LINE_AA)
        tiles.append(tile)
    height = max(tile.shape[0] for tile in tiles)
    columns = min(4, len(tiles))
    rows = math.ceil(len(tiles) / columns)
    grid = np.full((rows * height, columns * thumb_width, 3), 255, dtype=np.uint8)
    for i, tile in enumerate(tiles):
        r, c = divmod(i, columns)
        grid[r * height : r * height + tile.shape[0], c * thumb_width : (c + 1) * thumb_width] = tile
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), cv2.cvtColor(grid, cv2.COLOR_RGB2BGR))
    return path


def plot_reprojection_errors(reports: Sequence[ImageReport], rms_px: float, path: Path) -> Path:
    """Writes a PNG bar chart of each image's reprojection RMS; rejected images are red."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(6.0, 0.35 * len(reports) + 2), 3.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    values = [0.0 if math.isnan(r.rms_px) else r.rms_px for r in reports]
    colours = ["tab:green" if r.accepted else "tab:red" for r in reports]
    axes.bar(range(len(reports)), values, color=colours)
    for i, report in enumerate(reports):
        if math.isnan(report.rms_px):
            axes.text(i, 0, "x", ha="center", va="bottom", color="tab:red")
    axes.axhline(rms_px, color="black", linestyle="--", linewidth=1, label=f"overall RMS {rms_px:.3f} px")
    axes.set_xticks(range(len(reports)), [r.name for r in reports], rotation=60, ha="right", fontsize=7)
    axes.set_ylabel("reprojection RMS (px)")
    axes.set_title("per-image reprojection error (red: rejected, x: board not found)")
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path

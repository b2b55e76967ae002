"""`benchmarks/replay_experiment.py --ray-address`: a grid of runs as Ray tasks on a running cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_grid_runs_as_ray_tasks_and_skips_finished_runs(ray_address: str, tmp_path: Path) -> None:
    # 2 modes x 5 seeds of a few hundred reach steps (state policy, no camera); two runs are already in the results
    # file, so a rerun-safe grid sends the other 8 to the cluster and leaves those two alone.
    finished = [
        {"name": f"reach-uniform-state-noise0-aux0-seed{seed}-steps200", "final_success": 0.5, "evals": []}
        for seed in (0, 1)
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in finished))
    grid = "--tasks reach --modes uniform per --seeds 0 1 2 3 4 --total-steps 200 --eval-every-steps 200"
    grid += " --eval-episodes 1 --variant state --train-arg=--sim.cameras"  # nothing rendered: a state policy
    script = ROOT / "benchmarks" / "replay_experiment.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--ray-address", ray_address, "--out", str(tmp_path), *grid.split()],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "10 runs in the grid, 2 already finished, 8 to run on Ray" in proc.stdout
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert records[:2] == finished
    ran = records[2:]
    assert sorted(r["name"] for r in ran) == sorted(
        f"reach-{mode}-state-noise0-aux0-seed{seed}-steps200"
        for mode in ("uniform", "per")
        for seed in range(5)
        if (mode, seed) not in (("uniform", 0), ("uniform", 1))
    )
    for record in ran:
        assert record["evals"] and record["evals"][-1]["step"] >= 200, record
        assert (tmp_path / "runs" / record["name"] / "checkpoint").is_dir()
    assert not (tmp_path / "runs" / finished[0]["name"]).exists()

import json

import pytest

from vlmrl.errors import ConfigError
from vlmrl.pipelines import bench


def test_bench_runs_a_benchmark_script_and_collects_its_json(tmp_path, monkeypatch, capsys):
    script = tmp_path / "toy.py"
    script.write_text(
        "import argparse, json\n"
        "p = argparse.ArgumentParser(); p.add_argument('--json'); p.add_argument('--quick', action='store_true')\n"
        "a = p.parse_args()\n"
        "json.dump({'ours_per_s': 10.0, 'ref_per_s': 5.0, 'ratio': 2.0, 'quick': a.quick}, open(a.json, 'w'))\n"
    )
    monkeypatch.setattr(bench, "BENCHMARK_DIR", tmp_path)
    code = bench.main(bench.Config(names=("toy",), out_dir=tmp_path / "out"))
    assert code == 0
    figures = json.loads((tmp_path / "out" / "toy.json").read_text())
    assert figures["quick"] is True
    assert "ratio=2" in capsys.readouterr().out


def test_bench_reports_a_failing_benchmark(tmp_path, monkeypatch):
    (tmp_path / "broken.py").write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(bench, "BENCHMARK_DIR", tmp_path)
    assert bench.main(bench.Config(out_dir=tmp_path / "out")) == 1


def test_bench_rejects_unknown_names(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "BENCHMARK_DIR", tmp_path)
    with pytest.raises(ConfigError, match="unknown benchmark"):
        bench.main(bench.Config(names=("nope",), out_dir=tmp_path / "out"))

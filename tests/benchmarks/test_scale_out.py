"""benchmarks/scale_out.py's projection: per-actor rate against the learner's ingest and update limits."""

import importlib

import pytest


def test_projection_is_bound_by_the_actors_then_by_the_learner():
    scale_out = importlib.import_module("scale_out")
    # 100 steps/s per actor, 100-step episodes, 10 ms to ingest one (10,000 steps/s), 500 updates/s alone.
    rows = {r["actors"]: r for r in scale_out.projection(100.0, 100.0, 0.010, 500.0)}
    assert list(rows) == [1, 2, 8, 32, 128]
    assert rows[8]["collect_only_steps_per_s"] == pytest.approx(800.0)
    assert rows[8]["collect_bound"] == "actors"
    assert rows[128]["collect_only_steps_per_s"] == pytest.approx(10_000.0)  # the learner's ingest limit
    assert rows[128]["collect_bound"] == "learner ingest"
    # UTD 1: one step costs 1/500 s of updates plus 1/10,000 s of ingest, so at most 476 steps/s.
    assert rows[2]["utd1_training_steps_per_s"] == pytest.approx(200.0)
    assert rows[8]["utd1_training_steps_per_s"] == pytest.approx(1 / (1 / 500 + 1 / 10_000))
    assert rows[8]["utd1_bound"] == "learner updates"

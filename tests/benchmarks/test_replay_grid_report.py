"""The registered grid's report (benchmarks/replay_grid_report.py): Welch and Holm as registered, the headline
rule, steps to uniform's final success, missing cells named, and the files it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import replay_grid_report as grid
from scipy import stats


def record(cell: str, seed: int, curve: list[float], replay: dict | None = None) -> dict:
    # evaluations run at the first episode end past each 2,500 steps: a few steps late on some seeds
    steps = [2500.0 * (i + 1) + (seed * 37 if i else 0) for i in range(len(curve))]
    return {
        "cell": cell, "seed": seed, "name": f"{cell}-seed{seed}", "final_success": curve[-1],
        "evals": [{"step": s, "success_rate": v} for s, v in zip(steps, curve, strict=True)],
        "eval_every_steps": 2500, "replay": {"late": replay or {}}, "commit": "abc1234", "cpu": "Test CPU", "wall_s": 10.0,
    }  # fmt: skip


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


UNIFORM = [[0.0, 0.1, 0.2], [0.0, 0.2, 0.3], [0.1, 0.1, 0.2], [0.0, 0.2, 0.3], [0.0, 0.1, 0.25]]
BETTER = [[0.1, 0.4, 0.6], [0.2, 0.5, 0.7], [0.1, 0.4, 0.6], [0.2, 0.6, 0.7], [0.1, 0.5, 0.65]]


def test_holm_matches_the_step_down_rule() -> None:
    assert grid.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert grid.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert grid.holm([0.3, 0.2]) == pytest.approx([0.4, 0.4])  # monotone: never below a smaller p's
    assert grid.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def test_the_grids_comparisons_are_the_registered_ones() -> None:
    tests = grid.comparisons()
    # Meta-World reach: 4 conditions against uniform; the twin: 2 tasks x 3 demonstration levels x 2.
    assert len(tests) == 4 + 12
    assert ("twin/place/demos25/vlm-learned", "twin/place/demos25/uniform") in tests
    assert all(uniform.endswith("/uniform") and cell != uniform for cell, uniform in tests)


def test_a_complete_better_cell_is_the_headline_with_welch_and_holm(tmp_path: Path) -> None:
    rows = [record("twin/lift/demos0/uniform", s, c) for s, c in enumerate(UNIFORM)]
    rows += [
        record("twin/lift/demos0/vlm-oracle", s, c, {"score": 0.6, "buffer_score": 0.4})
        for s, c in enumerate(BETTER)
    ]
    rows += [record("twin/lift/demos0/vlm-learned", 0, BETTER[0])]  # one seed only: not complete
    rows += [{**record("twin/lift/demos0/uniform", 9, [1.0]), "cell": "ad-hoc"}]  # not a registered cell
    rep = grid.report(grid.load(write(tmp_path / "results.jsonl", rows)))

    test = next(t for t in rep["comparisons"] if t["cell"] == "twin/lift/demos0/vlm-oracle")
    finals_u, finals_v = [c[-1] for c in UNIFORM], [c[-1] for c in BETTER]
    assert test["complete"]
    assert test["p"] == pytest.approx(stats.ttest_ind(finals_v, finals_u, equal_var=False).pvalue)
    assert test["p_holm"] == pytest.approx(min(1.0, 16 * test["p"]))  # the only complete one: smallest p
    assert test["relative"] == pytest.approx(sum(finals_v) / sum(finals_u) - 1)
    # uniform reaches its final 0.25 (seed mean) at 7,500 steps; the better cell at 2,500 + 0.1/0.32 of 2,500
    assert test["uniform_steps_to_own_final"] == pytest.approx(7500.0)
    assert test["steps_to_uniform_final"] == pytest.approx(2500 + (0.25 - 0.14) / (0.48 - 0.14) * 2500)
    assert rep["headline"] == ["twin/lift/demos0/vlm-oracle"] and test["headline_by"] == ["success", "steps"]
    assert "twin/lift/demos0/vlm-oracle (by success and steps)" in grid.markdown(rep)

    learned = next(t for t in rep["comparisons"] if t["cell"] == "twin/lift/demos0/vlm-learned")
    assert not learned["complete"] and learned["p_holm"] is None and not learned["headline"]
    assert rep["missing"]["twin/lift/demos0/vlm-learned"] == [1, 2, 3, 4]
    assert rep["missing"]["metaworld/reach/uniform"] == [0, 1, 2, 3, 4]
    assert "twin/lift/demos0/uniform" not in rep["missing"]
    assert rep["diagnostics"]["twin/lift/demos0/vlm-oracle"]["score_gap"] == pytest.approx(0.2)


def test_no_headline_when_the_gain_is_not_significant(tmp_path: Path) -> None:
    noisy = [[0.0, 0.0, 0.0], [0.0, 0.2, 0.9], [0.0, 0.0, 0.1], [0.0, 0.0, 0.0], [0.0, 0.0, 0.4]]
    flat = [[0.0, 0.0, 0.3]] * 5
    rows = [record("twin/place/demos5/uniform", s, c) for s, c in enumerate(flat)]
    rows += [record("twin/place/demos5/vlm-learned", s, c) for s, c in enumerate(noisy)]
    rep = grid.report(grid.load(write(tmp_path / "results.jsonl", rows)))
    test = next(t for t in rep["comparisons"] if t["cell"] == "twin/place/demos5/vlm-learned")
    assert test["relative"] == pytest.approx(0.28 / 0.3 - 1)
    assert test["p"] > 0.05 and not test["headline"] and rep["headline"] == []


def test_main_writes_the_table_the_json_and_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [record("metaworld/reach/uniform", s, c) for s, c in reversed(list(enumerate(UNIFORM)))]
    rows += [record("metaworld/reach/per", s, c) for s, c in enumerate(UNIFORM)]
    results = write(tmp_path / "results.jsonl", rows)
    (tmp_path / "students" / "metaworld-reach-fit").mkdir(parents=True)
    summary = {"heldout": {"auc": 0.9731, "voc": 0.5, "ece": 0.1, "clips": 240}}
    (tmp_path / "students" / "metaworld-reach-fit" / "summary.json").write_text(json.dumps(summary))
    assert grid.main(["--results", str(results), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "grid.md").read_text()
    assert "| metaworld/reach/per | 5 | 20%, 30%, 20%, 30%, 25% | 25% ± 5% | +0% |" in md
    assert "| twin/place/demos25/vlm-learned | 0 | not run |" in md
    assert "No complete comparison meets it" in md
    assert "| metaworld-reach | 0.973 | 240 |" in md
    figures = json.loads((tmp_path / "out" / "grid.json").read_text())
    assert figures["holm_m"] == 16
    uniform = figures["cells"]["metaworld/reach/uniform"]  # seeds in order, evaluations on their schedule
    assert uniform["seeds"] == [0, 1, 2, 3, 4] and uniform["finals"] == [c[-1] for c in UNIFORM]
    assert uniform["curve"]["steps"] == [2500.0, 5000.0, 7500.0]
    assert (tmp_path / "out" / "curves.png").stat().st_size > 0
    assert f"![{grid.CURVES_ALT}](curves.png)" in md  # the plot beside it, linked from the report
    assert "metaworld/reach/per" in capsys.readouterr().out


def test_a_missing_results_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grid.main(["--results", str(tmp_path / "none.jsonl")]) == 2
    assert "no results file at" in capsys.readouterr().err


def test_committed_student_records_are_read_beside_fit_folders(tmp_path: Path) -> None:
    """results/vlm-replay/students holds ``<student>.json`` records (the fit's summary as ``fit_summary``); a run's
    folder holds ``<student>-fit/summary.json``; both reach the report, the fit folder first."""
    folder = tmp_path / "students"
    (folder / "twin-lift-fit").mkdir(parents=True)
    (folder / "twin-lift-fit" / "summary.json").write_text(
        json.dumps({"heldout": {"auc": 0.9, "windows": 10}})
    )
    record = {
        "student": "students/twin-place.pt",
        "fit_summary": {"heldout": {"auc": 0.99957, "windows": 178}},
    }
    (folder / "twin-place.json").write_text(json.dumps(record))
    (folder / "twin-lift.json").write_text(json.dumps({"fit_summary": {"heldout": {"auc": 0.1}}}))
    found = grid.students(folder)
    assert found["twin-place"]["auc"] == 0.99957 and found["twin-place"]["clips"] == 178
    assert found["twin-lift"]["auc"] == 0.9

"""The reward-program allow-list at its edges (issue #36: names starting with ``_`` and the ``range()`` literal
bound were untested, and mutants dropping either check survived)."""

from __future__ import annotations

import pytest

from vlm.reward_program import ProgramRejected, check_program
from vlm.reward_program.checker import MAX_RANGE


@pytest.mark.parametrize(
    "source",
    [
        "def check(obs):\n    _d = 1.0\n    return _d > 0\n",  # a local: known, so only the '_' rule refuses it
        "_LIMIT = 0.1\ndef check(obs):\n    return obs.gripper_open_frac < _LIMIT\n",
        "def check(obs):\n    for _i in range(3):\n        pass\n    return True\n",
        "def check(obs):\n    return np.clip(obs.gripper_open_frac, 0, 1, _out=1)\n",
    ],
)
def test_names_starting_with_an_underscore_are_refused(source: str) -> None:
    with pytest.raises(ProgramRejected, match=r"^line \d+: names starting with '_' are not allowed \('_"):
        check_program(source)


def test_a_range_literal_above_the_bound_is_refused_and_the_bound_itself_is_allowed() -> None:
    loop = "def check(obs):\n    total = 0\n    for i in {}:\n        total += 1\n    return total > 0\n"
    check_program(loop.format(f"range({MAX_RANGE})"))
    check_program(loop.format(f"range(10, {MAX_RANGE})"))
    for bound in (f"range({MAX_RANGE + 1})", f"range(0, {10 * MAX_RANGE})", f"range({MAX_RANGE + 1}, 0)"):
        with pytest.raises(ProgramRejected, match=rf"^line 3: loop bound above {MAX_RANGE}$"):
            check_program(loop.format(bound))

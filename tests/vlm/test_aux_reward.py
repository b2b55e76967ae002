import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlm import AuxRewardConfig, VLMError
from vlm.aux_reward import aux_rewards, combined_reward, potentials, scaled_rewards, shaping_rewards


def test_potential_holds_latest_score_and_later_entries_win_ties():
    phi = potentials(6, np.array([2, 4, 4]), np.array([0.5, 0.2, 0.9]))
    np.testing.assert_allclose(phi, [0, 0, 0.5, 0.5, 0.9, 0.9, 0.9])
    np.testing.assert_allclose(potentials(3, np.array([], int), np.array([])), np.zeros(4))


@settings(deadline=None, max_examples=60)
@given(
    n=st.integers(1, 30),
    gamma=st.floats(0.5, 1.0),
    terminated=st.booleans(),
    data=st.data(),
)
def test_shaping_telescopes_so_the_optimal_policy_is_kept(n, gamma, terminated, data):
    k = data.draw(st.integers(0, 5))
    ends = np.array(data.draw(st.lists(st.integers(0, n), min_size=k, max_size=k)), int)
    scores = np.array(data.draw(st.lists(st.floats(0, 1), min_size=k, max_size=k)))
    cfg = AuxRewardConfig(kind="shaping", gamma=gamma, weight=2.0)
    r = aux_rewards(cfg, n, ends, scores, terminated).astype(np.float64)
    phi = potentials(n, ends, scores)
    # Discounted sum of F = gamma^n Phi(s_n) - Phi(s_0): it depends only on the end states, so every
    # policy's return shifts by the same start-state term (Ng et al. 1999).
    discounted = np.sum(gamma ** np.arange(n) * r)
    final = 0.0 if terminated else phi[-1]
    assert discounted == pytest.approx(2.0 * (gamma**n * final - phi[0]), abs=1e-4)


def test_shaping_values():
    phi = np.array([0.0, 0.0, 0.5, 0.5])
    np.testing.assert_allclose(shaping_rewards(phi, 0.9, False), [0, 0.45, -0.05])
    np.testing.assert_allclose(shaping_rewards(phi, 0.9, True), [0, 0.45, -0.5])


def test_scaled_reward_lands_on_the_transition_into_the_judged_frame():
    np.testing.assert_allclose(
        scaled_rewards(4, np.array([0, 2, 4]), np.array([1.0, 0.3, 0.8])), [0, 0.3, 0, 0.8]
    )
    cfg = AuxRewardConfig(kind="scaled", weight=0.5, threshold=0.5)
    np.testing.assert_allclose(aux_rewards(cfg, 4, np.array([2, 4]), np.array([0.3, 0.8])), [0, 0, 0, 0.5])


def test_combined_reward_and_bad_inputs():
    np.testing.assert_allclose(combined_reward(np.array([1.0, 0.0]), np.array([0.5, -0.5]), 2.0), [2.0, -1.0])
    with pytest.raises(VLMError, match=r"in \[0, 3\]"):
        potentials(3, np.array([4]), np.array([0.5]))
    with pytest.raises(VLMError, match="scores"):
        potentials(3, np.array([1, 2]), np.array([0.5]))
    with pytest.raises(VLMError, match="finite"):
        scaled_rewards(3, np.array([1]), np.array([np.nan]))

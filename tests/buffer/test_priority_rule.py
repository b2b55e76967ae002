"""One score-to-priority rule for every sampler (buffer/samplers/priority.py), and the merged PER / VLM x TD
configs: shared fields, the same factory, and configs pickled before the merge still load."""

from __future__ import annotations

import base64
import pickle

import numpy as np

from buffer.config import (
    BufferConfig,
    PERSamplerConfig,
    ScorePriorityConfig,
    TDPriorityConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)
from buffer.factory import make_sampler
from buffer.samplers import PrioritizedSampler, VLMMixSampler
from buffer.samplers.priority import score_factor, td_factor

# [PERSamplerConfig(alpha=0.7), VLMMixSamplerConfig(lambda_end=0.9, score_exponent=2.0),
#  VLMTDSamplerConfig(alpha=0.3, default_score=0.2), BufferConfig(sampler=VLMTDSamplerConfig(eps=1e-4))]
# pickled (protocol 4) by the code before the merge (commit 31514d3).
OLD_PICKLE = (
    "gASVeAMAAAAAAABdlCiMDWJ1ZmZlci5jb25maWeUjBBQRVJTYW1wbGVyQ29uZmlnlJOUKYGUfZQojARraW5klIwDcGVylIwFYWxw"
    "aGGURz/mZmZmZmZmjApiZXRhX3N0YXJ0lEc/2ZmZmZmZmowRYmV0YV9hbm5lYWxfc3RlcHOUSqCGAQCMA2Vwc5RHPrDG96C17Y11"
    "YmgBjBNWTE1NaXhTYW1wbGVyQ29uZmlnlJOUKYGUfZQoaAaMB3ZsbV9taXiUjAxsYW1iZGFfc3RhcnSURwAAAAAAAAAAjApsYW1i"
    "ZGFfZW5klEc/7MzMzMzMzYwMd2FybXVwX3N0ZXBzlE0QJ4wNZGVmYXVsdF9zY29yZZRHP+AAAAAAAACMDnNjb3JlX2V4cG9uZW50"
    "lEdAAAAAAAAAAIwJc2NvcmVfZXBzlEc/UGJN0vGp/IwEYmV0YZRHAAAAAAAAAAB1YmgBjBJWTE1URFNhbXBsZXJDb25maWeUk5Qp"
    "gZR9lChoBowGdmxtX3RklGgIRz/TMzMzMzMzaAlHP9mZmZmZmZpoCkqghgEAaAtHPrDG96C17Y1oFEc/yZmZmZmZmmgVRz/wAAAA"
    "AAAAaBZHP1BiTdLxqfx1YmgBjAxCdWZmZXJDb25maWeUk5QpgZR9lCiMB3N0b3JhZ2WUjAZtZW1vcnmUjA5jYXBhY2l0eV9zdGVw"
    "c5RKoIYBAIwHc2FtcGxlcpRoGSmBlH2UKGgGaBxoCEc/4zMzMzMzM2gJRz/ZmZmZmZmaaApKoIYBAGgLRz8aNuLrHEMtaBRHP+AA"
    "AAAAAABoFUc/8AAAAAAAAGgWRz9QYk3S8an8dWKMEWZyYW1lX2NhY2hlX2J5dGVzlEoAAAAQjBBmcmFtZXNfcGVyX3NoYXJklEuA"
    "jAtmcmFtZV9jb2RlY5SMBG5vbmWUjAxyZWFkX3RocmVhZHOUSwSMBWZzeW5jlImMBm5fc3RlcJRLAYwFZ2FtbWGURz/vrhR64Ueu"
    "jAtmcmFtZV9zdGFja5RLAYwLY2xpcF9sZW5ndGiUSwiMC2NsaXBfc3RyaWRllEsCjAtjbGlwX2NhbWVyYZSMAJSMD3ByaW9yaXR5"
    "X3Njb3JlcpRoM4wRYXV4X3Jld2FyZF9zY29yZXKUaDOMEWF1eF9yZXdhcmRfd2VpZ2h0lEc/8AAAAAAAAIwEc2VlZJRLAHViZS4="
)


def test_score_factor_and_td_factor():
    f = score_factor(
        np.array([0.0, 1.0, np.nan], np.float32), default_score=0.25, score_eps=0.5, score_exponent=2
    )
    np.testing.assert_allclose(f, [0.25, 2.25, 0.5625])
    np.testing.assert_allclose(td_factor(np.array([4.0, 9.0]), 0.5), [2.0, 3.0])


def _tree_weights(sampler, n: int) -> np.ndarray:
    return np.array([sampler._tree.get(np.array([i]))[0] for i in range(n)])


def test_vlm_mix_and_vlm_td_weight_transitions_by_the_same_score_factor():
    n = 6
    scores = np.array([0.0, 0.1, 0.5, 0.9, 1.0], np.float32)  # position 5 keeps no score
    shared = dict(default_score=0.3, score_exponent=1.5, score_eps=0.01)
    mix = make_sampler(VLMMixSamplerConfig(**shared), n)
    vlm_td = make_sampler(VLMTDSamplerConfig(alpha=1.0, **shared), n)
    assert isinstance(mix, VLMMixSampler) and isinstance(vlm_td, PrioritizedSampler)
    expected = score_factor(np.append(scores, np.nan), **shared)
    for sampler in (mix, vlm_td):
        sampler.add(np.arange(n))
        sampler.set_scores(np.arange(5), scores)
    np.testing.assert_allclose(_tree_weights(mix, n), expected)
    np.testing.assert_allclose(_tree_weights(vlm_td, n), expected)  # new transitions: TD priority 1
    td = np.array([0.5, 1.0, 2.0, 0.0, 3.0, 1.0])
    vlm_td.update_priorities(np.arange(n), td)
    np.testing.assert_allclose(_tree_weights(vlm_td, n), expected * td_factor(td + 1e-6, 1.0))


def test_per_and_vlm_td_share_their_td_fields_and_one_factory():
    assert issubclass(PERSamplerConfig, TDPriorityConfig) and not issubclass(
        PERSamplerConfig, ScorePriorityConfig
    )
    assert issubclass(VLMTDSamplerConfig, TDPriorityConfig) and issubclass(
        VLMTDSamplerConfig, ScorePriorityConfig
    )
    assert issubclass(VLMMixSamplerConfig, ScorePriorityConfig)
    per = make_sampler(PERSamplerConfig(alpha=0.7, beta_start=0.2), 8)
    assert isinstance(per, PrioritizedSampler) and per.score_exponent is None and per.alpha == 0.7
    vlm_td = make_sampler(VLMTDSamplerConfig(alpha=0.3, score_exponent=2.0), 8)
    assert isinstance(vlm_td, PrioritizedSampler) and vlm_td.score_exponent == 2.0 and vlm_td.alpha == 0.3


def test_configs_pickled_before_the_merge_still_load():
    per, mix, vlm_td, buffer_cfg = pickle.loads(base64.b64decode(OLD_PICKLE))
    assert per == PERSamplerConfig(alpha=0.7)
    assert mix == VLMMixSamplerConfig(lambda_end=0.9, score_exponent=2.0)
    assert vlm_td == VLMTDSamplerConfig(alpha=0.3, default_score=0.2)
    assert buffer_cfg == BufferConfig(sampler=VLMTDSamplerConfig(eps=1e-4))
    assert isinstance(make_sampler(vlm_td, 4), PrioritizedSampler)

"""Exported policy (TorchScript, ONNX run in onnxruntime) matches the in-training actor; errors are one line."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from torch import nn

from agents.config import PixelEncoderConfig, SACConfig
from agents.errors import AgentError
from agents.export import export_onnx, export_policy, load_policy
from agents.sac import SAC
from buffer.batch import Batch

SPEC = {
    "state": ((4,), np.dtype(np.float32)),
    "gripper.pos": ((1,), np.dtype(np.float32)),
    "pixels/wrist": ((20, 20, 3), np.dtype(np.uint8)),
}
CFG = SACConfig(hidden_dims=(16, 16), pixel=PixelEncoderConfig(channels=4, num_layers=2, feature_dim=6))


def obs_batch(batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "state": rng.normal(5.0, 3.0, (batch, 4)).astype(np.float32),
        "gripper.pos": rng.uniform(0, 100, (batch, 1)).astype(np.float32),
        "pixels/wrist": rng.integers(0, 256, (batch, 20, 20, 3), dtype=np.uint8),
    }


def make_trained(spec: dict[str, tuple[tuple[int, ...], np.dtype]]) -> SAC:
    sac = SAC(
        CFG, spec, gym.spaces.Box(np.array([-1, 0, 10], np.float32), np.array([1, 100, 20], np.float32))
    )
    for seed in range(3):  # moves the normaliser statistics away from (0, 1) so the bake-in is tested
        sac.update(
            Batch(
                obs_batch(32, seed),
                np.zeros((32, 3), np.float32),
                np.ones(32, np.float32),
                obs_batch(32, seed + 10),
                np.zeros(32, np.float32),
                np.full(32, 0.99, np.float32),
                np.ones(32, np.float32),
                np.arange(32),
            )
        )
    assert float(sac.encoder.normalizer.mean.abs().max()) > 1.0
    return sac


@pytest.fixture(scope="module")
def trained() -> SAC:
    return make_trained(SPEC)


@pytest.fixture(scope="module")
def trained_state_only() -> SAC:
    return make_trained({k: v for k, v in SPEC.items() if k != "pixels/wrist"})


def test_torchscript_policy_matches_the_training_actor(trained: SAC, tmp_path) -> None:
    path = export_policy(trained, tmp_path / "policy.pt")
    policy = load_policy(path)
    batch = obs_batch(8, seed=99)
    np.testing.assert_allclose(policy(batch), trained.act(batch, deterministic=True), rtol=1e-5, atol=1e-5)
    single = {k: v[0] for k, v in batch.items()}
    np.testing.assert_allclose(policy(single), trained.act(single, deterministic=True), rtol=1e-5, atol=1e-5)
    assert policy(single).shape == (3,)
    # Plain torch.jit.load runs it too (no vlmrl code on the robot side).
    raw = torch.jit.load(str(path))
    out = raw({k: torch.as_tensor(v) for k, v in batch.items()}).numpy()
    np.testing.assert_allclose(out, policy(batch), rtol=1e-6)
    assert policy.metadata["obs_spec"]["pixels/wrist"] == [[20, 20, 3], "uint8"]


def test_policy_reports_missing_keys_and_bad_files(trained: SAC, tmp_path) -> None:
    policy = load_policy(export_policy(trained, tmp_path / "policy.pt"))
    with pytest.raises(AgentError, match=r"missing key 'gripper\.pos'"):
        policy({"state": np.zeros(4, np.float32), "pixels/wrist": np.zeros((20, 20, 3), np.uint8)})
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a policy")
    with pytest.raises(AgentError, match="not a vlmrl policy file"):
        load_policy(junk)


def test_onnx_export_has_one_input_per_observation_key(trained: SAC, tmp_path) -> None:
    path = export_onnx(trained, tmp_path / "policy.onnx")
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == list(SPEC)
    assert [o.name for o in model.graph.output] == ["action"]


@pytest.mark.parametrize("agent", ["trained", "trained_state_only"])
def test_onnxruntime_actions_match_the_torch_policy(agent: str, request, tmp_path) -> None:
    sac: SAC = request.getfixturevalue(agent)
    path = export_onnx(sac, tmp_path / "policy.onnx")
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    batch = {k: v for k, v in obs_batch(16, seed=99).items() if k in sac.obs_spec}
    (actions,) = session.run(["action"], batch)
    assert actions.shape == (16, 3) and actions.dtype == np.float32
    # rtol as in the TorchScript test: actions reach 100 (env units), where one float32 ulp is 7.6e-6.
    np.testing.assert_allclose(actions, sac.act(batch, deterministic=True), rtol=1e-5, atol=1e-5)


def test_onnx_export_rejects_a_graph_that_computes_other_actions(trained: SAC, tmp_path, monkeypatch) -> None:
    real_export = torch.onnx.export

    def export_shifted(model: nn.Module, *args, **kwargs):
        class Shifted(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
                return self.model(*inputs) + 0.01

        return real_export(Shifted(), *args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", export_shifted)
    with pytest.raises(AgentError, match=r"policy\.onnx: onnxruntime's actions differ .* by up to 0\.01$"):
        export_onnx(trained, tmp_path / "policy.onnx")


def test_onnx_export_works_without_onnxruntime(trained: SAC, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    path = export_onnx(trained, tmp_path / "policy.onnx")
    assert [i.name for i in onnx.load(str(path)).graph.input] == list(SPEC)

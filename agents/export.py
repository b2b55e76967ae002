"""Export the actor (with observation normalisation and action scaling baked in) and load it back.

``policy.pt`` is TorchScript: ``torch.jit.load`` alone runs it, no vlmrl code needed. Its forward takes
the observation dict (the keys of ``metadata["obs_spec"]``, batched or single) and returns the
deterministic action in env units. ``load_policy`` only imports torch and numpy.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from agents.errors import AgentError

if TYPE_CHECKING:
    from agents.encoders import ObsSpec
    from agents.iql import IQL
    from agents.sac import SAC

    Agent = SAC | IQL  # both have encoder, actor (deterministic action tanh(mean)), action bounds, obs_spec

FORMAT_VERSION = 1
METADATA_FILE = "vlmrl_policy.json"


class Policy(nn.Module):
    """Encoder + actor mean + tanh + scaling to env units: what ships to the robot."""

    if TYPE_CHECKING:  # buffers; TorchScript must not see class annotations
        action_low: torch.Tensor
        action_high: torch.Tensor

    def __init__(self, sac: Agent) -> None:
        super().__init__()
        self.encoder = copy.deepcopy(sac.encoder).eval()
        # SAC's averaged actor when it keeps one (``actor_ema``); IQL has only its actor
        self.actor = copy.deepcopy(getattr(sac, "eval_actor", sac.actor)).eval()
        self.register_buffer("action_low", sac.action_low.detach().clone().cpu())
        self.register_buffer("action_high", sac.action_high.detach().clone().cpu())
        spec = actor_obs_spec(sac)
        self.first_key: str = next(iter(spec))
        self.first_rank: int = len(spec[self.first_key][0])
        self.requires_grad_(False)

    def forward(self, obs: dict[str, Tensor]) -> Tensor:
        """Deterministic action float32[A] (or [B, A] for batched observations) in env units."""
        batched = obs[self.first_key].dim() == self.first_rank + 1
        if not batched:
            obs = {k: v.unsqueeze(0) for k, v in obs.items()}
        unit = self.actor.deterministic(self.encoder(obs))
        action = self.action_low + 0.5 * (unit + 1.0) * (self.action_high - self.action_low)
        return action if batched else action[0]


def actor_obs_spec(agent: Agent) -> ObsSpec:
    """The observation keys the exported actor reads: the agent's keys without critic-only (privileged) ones."""
    return {k: v for k, v in agent.obs_spec.items() if k in agent.encoder.actor_keys}


def policy_metadata(sac: Agent) -> dict[str, Any]:
    """What a deploy loop needs to feed the policy: observation keys, shapes, dtypes, action bounds."""
    return {
        "format_version": FORMAT_VERSION,
        "obs_spec": {
            k: [list(shape), np.dtype(dtype).name] for k, (shape, dtype) in actor_obs_spec(sac).items()
        },
        "action_low": sac.action_low.cpu().tolist(),
        "action_high": sac.action_high.cpu().tolist(),
    }


def export_policy(sac: Agent, path: str | Path, run: Mapping[str, Any] | None = None) -> Path:
    """Write the actor as TorchScript to ``path`` (conventionally ``policy.pt``); returns the path.

    ``run`` is what the policy needs from the world it runs in, as plain JSON data: the pipeline that
    trained it decides the keys (``vlmrl.deployment.policy_episodes.policy_run_info``: suite, task, cameras and their
    calibration ids, image size, control rate, action mode). It is stored under ``metadata["run"]`` so a
    deploy loop can set itself up from the file and refuse a mismatch; ``LoadedPolicy.run`` reads it back.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = policy_metadata(sac)
    if run is not None:
        metadata["run"] = dict(run)
    extra = {METADATA_FILE: json.dumps(metadata)}
    with warnings.catch_warnings():  # TorchScript's deprecation notice; it is still what robots load
        warnings.simplefilter("ignore", FutureWarning)
        module = torch.jit.script(Policy(sac).cpu())
        torch.jit.save(module, str(path), _extra_files=extra)
    return path


def export_onnx(sac: Agent, path: str | Path) -> Path:
    """Write the actor as ONNX (inputs named by observation key, batched; output ``action``).

    When onnxruntime is installed (the ``export`` extra), the written file is run on a few random
    observations and compared with the torch policy; AgentError names the largest difference if the
    actions disagree beyond float32 rounding (rtol and atol 1e-4).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    policy = Policy(sac).cpu()
    spec = actor_obs_spec(sac)
    keys = list(spec)

    class _Flat(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.policy = policy

        def forward(self, *inputs: Tensor) -> Tensor:
            return self.policy(dict(zip(keys, inputs)))

    examples = tuple(
        torch.zeros((1, *shape), dtype=torch.from_numpy(np.zeros(0, dtype)).dtype)
        for shape, dtype in spec.values()
    )
    torch.onnx.export(
        _Flat(),
        examples,
        str(path),
        input_names=keys,
        output_names=["action"],
        dynamic_axes={**{k: {0: "batch"} for k in keys}, "action": {0: "batch"}},
        dynamo=False,
    )
    _check_onnx(policy, spec, path)
    return path


def _check_onnx(policy: Policy, obs_spec: ObsSpec, path: Path) -> None:
    """Run the written graph in onnxruntime on random observations; raise AgentError if its actions drift.

    The legacy TorchScript exporter traces one example, so a data-dependent branch or a dtype the
    exporter mishandles would go unnoticed until deploy; this catches it at export time.
    """
    try:
        import onnxruntime
    except ImportError:  # the check comes with the [export] extra; exporting does not need it
        return
    rng = np.random.default_rng(0)
    obs = {
        key: (
            rng.integers(0, 256, (4, *shape))
            if np.issubdtype(dtype, np.integer)
            else rng.normal(size=(4, *shape))
        ).astype(dtype)
        for key, (shape, dtype) in obs_spec.items()
    }
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    actual = session.run(["action"], obs)[0]
    with torch.no_grad():
        expected = policy({k: torch.from_numpy(v) for k, v in obs.items()}).numpy()
    if not np.allclose(actual, expected, rtol=1e-4, atol=1e-4):
        diff = float(np.abs(actual - expected).max())
        raise AgentError(f"{path}: onnxruntime's actions differ from the torch policy's by up to {diff:.3g}")


class LoadedPolicy:
    """An exported policy: call it with a numpy observation dict, get a float32 action in env units."""

    def __init__(self, module: torch.jit.ScriptModule, metadata: dict[str, Any]) -> None:
        self.module = module
        self.metadata = metadata
        self.obs_spec = {
            k: (tuple(shape), np.dtype(dtype)) for k, (shape, dtype) in metadata["obs_spec"].items()
        }
        self.action_low = np.asarray(metadata["action_low"], np.float32)
        self.action_high = np.asarray(metadata["action_high"], np.float32)
        self.run: dict[str, Any] = dict(metadata.get("run") or {})
        """How the policy was trained (``export_policy``'s ``run``); empty for files written without it."""

    @torch.no_grad()
    def __call__(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        tensors: dict[str, Tensor] = {}
        for key, (_, dtype) in self.obs_spec.items():
            if key not in obs:
                raise AgentError(f"observation is missing key {key!r} (policy reads {list(self.obs_spec)})")
            tensors[key] = torch.as_tensor(np.asarray(obs[key], dtype=dtype))
        return self.module(tensors).numpy().astype(np.float32)


def load_policy(path: str | Path) -> LoadedPolicy:
    """Load a ``policy.pt`` written by ``export_policy``; raises AgentError if it is not one."""
    extra = {METADATA_FILE: ""}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
        metadata = json.loads(extra[METADATA_FILE])
    except (OSError, RuntimeError, ValueError) as exc:
        raise AgentError(f"{path}: not a vlmrl policy file ({str(exc).strip().splitlines()[0]})") from None
    if metadata.get("format_version") != FORMAT_VERSION:
        raise AgentError(f"{path}: policy format {metadata.get('format_version')}, expected {FORMAT_VERSION}")
    module.eval()
    return LoadedPolicy(module, metadata)

"""Configs of the vlm package: one frozen dataclass per scorer backend, the worker, server and aux reward."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Device = Literal["auto", "cpu", "cuda"]
DType = Literal["auto", "float32", "bfloat16", "float16"]


@dataclass(frozen=True, kw_only=True)
class ScorerRayConfig:
    """Where a scorer runs: in this process, or in a pool of Ray actors each hosting the backend."""

    actors: int = 0
    """Ray actors each hosting the backend; a score call's clips are spread over them (0: the backend runs
    in this process and Ray is not imported). The pool joins the Ray cluster this process already uses,
    else the one in RAY_ADDRESS, else starts a local one."""
    cpus_per_actor: float = 1.0
    """CPUs Ray reserves per actor."""
    gpus_per_actor: float = 0.0
    """GPUs Ray reserves per actor (1 for a VLM on its own GPU; fractions share one)."""
    max_in_flight: int = 2
    """Score requests sent to one actor and not answered yet; more wait (bounds clips held in memory)."""
    timeout_s: float = 600.0
    """Longest wait for one actor's answer (a dead actor fails at once; this is for a hung one)."""


@dataclass(frozen=True, kw_only=True)
class HFConfig:
    """A transformers image-text-to-text model scored by P(yes) from its next-token logits."""

    kind: Literal["hf"] = "hf"
    """Backend tag (fixed)."""
    model: str = "HuggingFaceTB/SmolVLM-256M-Instruct"
    """Hub id or local directory of the model and its processor."""
    num_frames: int = 4
    """Frames per clip shown to the model (evenly spaced, the last frame always included)."""
    max_image_side: int = 0
    """Downscale frames so their longer side is at most this many pixels before the processor (0: as is)."""
    batch_size: int = 4
    """Clips per forward pass."""
    device: Device = "auto"
    """Where the model runs; auto picks cuda when available."""
    dtype: DType = "auto"
    """Weights dtype; auto is bfloat16 (float16 without bf16 support) on GPU and float32 on CPU."""
    revision: str = ""
    """Hub revision (branch, tag or commit); empty for the default."""
    trust_remote_code: bool = False
    """Allow model code from the hub (only for models transformers does not ship)."""
    ray: ScorerRayConfig = field(default_factory=ScorerRayConfig)
    """Run in this process, or in a pool of Ray actors (``--scorer.ray.actors M``)."""


@dataclass(frozen=True, kw_only=True)
class OpenAIConfig:
    """An OpenAI-compatible server (vLLM, SGLang, Ollama, `vlmrl serve`) scored through logprobs."""

    kind: Literal["openai"] = "openai"
    """Backend tag (fixed)."""
    base_url: str = "http://127.0.0.1:8000/v1"
    """Server root including the /v1 prefix."""
    replica_urls: tuple[str, ...] = ()
    """Roots (with /v1) of more servers of the same model, one per vLLM replica: requests go in turn to
    base_url and these, a replica that fails is marked down, and all down stops scoring with one line."""
    replica_retry_s: float = 10.0
    """How long a failed replica stays down before a health check (GET /models) may bring it back."""
    model: str = ""
    """Served model name; empty asks the server's /v1/models and takes the first."""
    api_key: str = ""
    """Bearer key; empty reads the environment variable named by ``api_key_env``."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the bearer key when ``api_key`` is empty."""
    endpoint: Literal["chat", "score"] = "chat"
    """chat: one /v1/chat/completions request per clip (any server); score: batches on /v1/score
    (`vlmrl serve` only; also carries the clips' privileged info, which the oracle needs)."""
    num_frames: int = 4
    """Frames per clip sent as images (evenly spaced, the last frame always included)."""
    frames_as: Literal["images", "tiled"] = "images"
    """images: one image part per frame; tiled: the frames side by side in one image (for servers that
    take one image per prompt, such as vLLM without --limit-mm-per-prompt); the prompt then says so."""
    image_format: Literal["jpeg", "png"] = "jpeg"
    """Image encoding inside the base64 data URLs."""
    jpeg_quality: int = 90
    """JPEG quality (1-100) when image_format is jpeg."""
    top_logprobs: int = 20
    """How many alternatives to ask for at the answer token; a server that caps it lower (vLLM:
    --max-logprobs, 20 by default) is asked again with its cap, read from its 400 message."""
    timeout_s: float = 60.0
    """Per-request timeout (connect, read and write)."""
    max_retries: int = 3
    """Retries after a timeout, a dropped connection, 429 or 5xx; 4xx other than 429 fail at once."""
    backoff_s: float = 0.5
    """First retry delay; doubles per retry, with +-50% jitter."""
    max_concurrency: int = 8
    """Requests in flight at once."""
    ray: ScorerRayConfig = field(default_factory=ScorerRayConfig)
    """Run in this process, or in a pool of Ray actors (``--scorer.ray.actors M``)."""


@dataclass(frozen=True, kw_only=True)
class CLIPConfig:
    """Contrastive image-text similarity (CLIP, SigLIP) with VLM-RM's goal-baseline projection."""

    kind: Literal["clip"] = "clip"
    """Backend tag (fixed)."""
    model: str = "openai/clip-vit-base-patch32"
    """Hub id or local directory of a CLIP or SigLIP model and its processor."""
    baseline_prompt: str = "a robot arm on a table"
    """Text describing the scene without the goal achieved (VLM-RM's baseline b)."""
    projection_alpha: float = 0.5
    """Weight of the goal-baseline direction in the projection (0: plain cosine distance to the goal)."""
    pool: Literal["mean", "max", "last"] = "last"
    """How per-frame scores become one clip score."""
    num_frames: int = 4
    """Frames per clip embedded (evenly spaced, the last frame always included)."""
    batch_size: int = 32
    """Images per forward pass."""
    device: Device = "auto"
    """Where the model runs; auto picks cuda when available."""
    dtype: DType = "auto"
    """Weights dtype; auto is float16 on GPU and float32 on CPU."""
    ray: ScorerRayConfig = field(default_factory=ScorerRayConfig)
    """Run in this process, or in a pool of Ray actors (``--scorer.ray.actors M``)."""


@dataclass(frozen=True, kw_only=True)
class OracleConfig:
    """The privileged sim signal (task progress or success) as a score; an upper bound, not a VLM."""

    kind: Literal["oracle"] = "oracle"
    """Backend tag (fixed)."""
    signal: Literal["progress", "success"] = "progress"
    """Which per-step info array of the clip to read."""
    reduce: Literal["last", "max", "mean"] = "last"
    """How the clip's per-step values become one score."""
    noise: float = 0.0
    """Label-noise rate in [0, 1]: each score is replaced by 1 - score with this probability."""
    seed: int = 0
    """Seed of the label noise."""
    latency_s: float = 0.0
    """Sleep per score call: a stand-in for a remote GPU in benchmarks and fault tests."""
    ray: ScorerRayConfig = field(default_factory=ScorerRayConfig)
    """Run in this process, or in a pool of Ray actors (``--scorer.ray.actors M``)."""


@dataclass(frozen=True, kw_only=True)
class LearnedConfig:
    """A small conv clip scorer fitted on labelled episodes by `vlmrl scorer fit` (reads pixels, no VLM)."""

    kind: Literal["learned"] = "learned"
    """Backend tag (fixed)."""
    path: str = "student.pt"
    """The scorer file written by `vlmrl scorer fit`."""
    resize: bool = False
    """Resize frames of another size to the fitted size instead of refusing them (scores degrade)."""
    batch_size: int = 64
    """Clips per forward pass."""
    device: Device = "cpu"
    """Where the net runs; it is small enough for a CPU."""
    ray: ScorerRayConfig = field(default_factory=ScorerRayConfig)
    """Run in this process, or in a pool of Ray actors (``--scorer.ray.actors M``)."""


ScorerConfig = HFConfig | OpenAIConfig | CLIPConfig | OracleConfig | LearnedConfig
"""Any backend's config; ``vlm.make_scorer`` picks the backend from the type."""


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """The asynchronous scoring worker between the replay buffer and a scorer."""

    batch_size: int = 8
    """Clips per score call."""
    batch_wait_s: float = 0.25
    """How long to wait for a fuller batch once one clip is waiting. Clips that trickle in one at a time
    (every ~50 ms on a twin rollout) then share a request: each HTTP request to a remote scorer costs the
    training process ~1-2 ms of CPU (benchmarks/scoring.py, ``worker_cpu_ms_per_clip``), and a score
    arriving 0.2 s later changes nothing for replay. Clips of a committed episode come together and
    fill a batch at once."""
    max_backlog: int = 1024
    """Unscored clips kept; when full, the oldest unscored clip is dropped (and counted)."""
    backoff_s: float = 0.5
    """Delay after the first failed batch; doubles per consecutive failure, with +-50% jitter."""
    max_backoff_s: float = 10.0
    """Longest delay between retries while the circuit is closed."""
    breaker_failures: int = 5
    """Consecutive failed batches that open the circuit breaker."""
    breaker_cooldown_s: float = 30.0
    """While open, one trial batch per cooldown; a success closes it and the backlog drains."""
    latency_window: int = 512
    """Recent batch latencies kept for the percentiles in ``metrics()``."""


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """`vlmrl serve`: the OpenAI-compatible subset plus /v1/score over a local backend."""

    host: str = "127.0.0.1"
    """Bind address; loopback unless you mean to expose the model."""
    port: int = 8000
    """TCP port."""
    api_key: str = ""
    """Bearer key clients must send; empty reads VLMRL_API_KEY, and if that is unset too, no key."""
    model_name: str = ""
    """Name under /v1/models and in responses; empty uses the backend's scorer id."""
    max_request_bytes: int = 32 * 1024 * 1024
    """Largest request body accepted (413 above)."""
    max_images: int = 64
    """Most images in one chat request, or frames in one /v1/score clip (1 acts like vLLM without
    --limit-mm-per-prompt: a chat request with more is refused with vLLM's 400 message)."""
    max_top_logprobs: int = 20
    """Largest top_logprobs accepted (vLLM's --max-logprobs, 20 by default); more is refused with a 400
    saying the cap, as vLLM does."""
    zero_logprob: float | None = None
    """Logprob reported for an answer (or a listed alternative) of probability 0: None clips the
    probability at 1e-12; vLLM reports -9999.0; -inf sends JSON -Infinity (as some servers do)."""
    max_clips: int = 64
    """Most clips in one /v1/score request."""
    max_image_side: int = 2048
    """Largest image width or height accepted (checked from the image header, before decoding)."""
    max_batch: int = 8
    """Most clips scored in one backend call (concurrent requests are micro-batched)."""
    batch_wait_s: float = 0.005
    """How long the batcher waits for more requests once one is queued."""


@dataclass(frozen=True, kw_only=True)
class AuxRewardConfig:
    """How clip scores become a per-step auxiliary reward added to the env reward."""

    kind: Literal["shaping", "scaled"] = "shaping"
    """shaping: gamma * Phi(s') - Phi(s) with Phi the latest clip score (keeps the optimal policy);
    scaled: weight * score on the transition that reaches the clip's last frame."""
    weight: float = 1.0
    """Multiplier on the auxiliary reward."""
    gamma: float = 0.99
    """Discount of the shaping term; use the agent's gamma."""
    threshold: float | None = None
    """If set, scores are binarised (score >= threshold) before use."""

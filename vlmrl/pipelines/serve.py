"""Serve a local scorer (hf, clip, oracle or learned) behind the OpenAI chat-completions API plus /v1/score.

Example: ``vlmrl serve --server.port 8000 scorer:hf --scorer.model HuggingFaceTB/SmolVLM-256M-Instruct``;
then train elsewhere with ``scorer:openai --scorer.base-url http://<host>:8000/v1``. Binds 127.0.0.1
unless ``--server.host`` says otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vlm.config import HFConfig, ServerConfig
from vlmrl.scorers.choice import ScorerChoice, ready_scorer

ServedScorer = ScorerChoice


@dataclass(frozen=True, kw_only=True)
class Config:
    """`vlmrl serve` options."""

    scorer: ServedScorer = field(default_factory=HFConfig)
    """The backend to serve (openai relays to another server)."""
    server: ServerConfig = field(default_factory=ServerConfig)
    """Address, key, request limits and micro-batching."""
    run_dir: str = "runs/serve"
    """Where the resolved config is written (the API key is redacted)."""
    log_level: str = "warning"
    """uvicorn log level (debug, info, warning, error)."""


def _resolved(cfg: Config) -> dict[str, object]:
    data = dataclasses.asdict(cfg)
    for section in ("server", "scorer"):
        if data[section].get("api_key"):
            data[section]["api_key"] = "<redacted>"
    return data


def main(cfg: Config) -> int:
    """Builds the scorer (failing fast if its model cannot be reached) and serves it until interrupted."""
    import uvicorn

    from vlm.server import create_app, resolve_api_key

    scorer, _ = ready_scorer(cfg.scorer)  # its clients send their own prompts
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(_resolved(cfg), indent=2))
    app = create_app(scorer, cfg.server)
    host, port = cfg.server.host, cfg.server.port
    if host not in ("127.0.0.1", "localhost", "::1"):
        key_note = "with an API key" if resolve_api_key(cfg.server) else "WITHOUT an API key"
        print(f"vlmrl serve: listening on {host}, reachable from other machines, {key_note}", file=sys.stderr)
    print(f"vlmrl serve: {scorer.scorer_id} at http://{host}:{port}/v1", flush=True)
    uvicorn.run(app, host=host, port=port, log_level=cfg.log_level, timeout_graceful_shutdown=5)
    return 0

"""`vlmrl serve` through the real CLI: fails fast with one line, writes its resolved config, serves."""

import json
import socket
import subprocess
import sys
import time

import httpx
import pytest

from vlm import OracleConfig, ServerConfig
from vlmrl import cli
from vlmrl.pipelines import serve


def test_unreachable_model_is_one_line_error_without_traceback(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlmrl",
            "serve",
            "--run-dir",
            str(tmp_path),
            "scorer:hf",
            "--scorer.model",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vlmrl serve: error: model directory")
    assert "Traceback" not in proc.stderr


def test_help_lists_backends(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = capsys.readouterr().out
    for backend in ("scorer:hf", "scorer:clip", "scorer:oracle", "scorer:openai"):
        assert backend in out


@pytest.mark.slow
def test_serve_writes_redacted_config_and_answers(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = [
        sys.executable,
        "-m",
        "vlmrl",
        "serve",
        "--server.port",
        str(port),
        "--server.api-key",
        "top-secret",
    ]
    argv += ["--run-dir", str(tmp_path / "run"), "scorer:oracle", "--scorer.noise", "0.1"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        health = None
        while health is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()
            except httpx.HTTPError:
                time.sleep(0.1)
        assert health is not None, "server did not start"
        assert health["scorer_id"] == "oracle-noise0.1"
        key = {"Authorization": "Bearer top-secret"}
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", headers=key).json()
        assert models["data"][0]["id"] == "oracle-noise0.1"
        text = (tmp_path / "run" / "config.json").read_text()
        written = json.loads(text)
        assert written["server"]["api_key"] == "<redacted>" and written["scorer"]["noise"] == 0.1
        assert "top-secret" not in text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert f"oracle-noise0.1 at http://127.0.0.1:{port}/v1" in out


def test_resolved_config_redacts_keys():
    cfg = serve.Config(scorer=OracleConfig(), server=ServerConfig(api_key="k"))
    assert serve._resolved(cfg)["server"]["api_key"] == "<redacted>"

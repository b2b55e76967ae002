"""`vlmrl reward-program generate|verify` against real server processes on 127.0.0.1.

A `vlmrl serve` process over a tiny random VLM is what "a model" is here: it cannot write programs
(it only scores clips with a yes/no token), so generate must fail with one clear line and keep the
audit trail. A second, canned-answer OpenAI-compatible process stands in for a model that writes the
hand-written lift program, so generate -> verify -> train runs end to end.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from vlm.random_models import save_random_vlm
from vlm.reward_program import load_program
from vlmrl import cli

ROOT = Path(__file__).resolve().parents[2]
LIFT = ROOT / "examples" / "reward_programs" / "lift.json"
FAST = ["--verification.expert-episodes", "2", "--verification.random-episodes", "2"]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(argv, port, log_path, env=None):
    log = open(log_path, "ab")  # noqa: SIM115 - closed by the fixture
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {log_path}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc, log
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server not healthy; see {log_path}")


def _stop(proc, log):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    log.close()


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory):
    """`vlmrl serve` over a tiny random Idefics3 model, with an API key."""
    tmp = tmp_path_factory.mktemp("serve")
    model = save_random_vlm(tmp / "idefics3", "idefics3")
    port = _free_port()
    argv = [sys.executable, "-m", "vlmrl", "serve", "--server.port", str(port), "--run-dir", str(tmp / "run")]
    argv += ["scorer:hf", "--scorer.model", str(model), "--scorer.num-frames", "2"]
    proc, log = _start(argv, port, tmp / "serve.log", env={"VLMRL_API_KEY": "sekret"})
    yield f"http://127.0.0.1:{port}/v1"
    _stop(proc, log)


CANNED_SERVER = textwrap.dedent(
    """
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answers = json.load(open(sys.argv[2]))
    log_path = sys.argv[3]
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body, status=200):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self._send({"status": "ok"})
            else:
                self._send({"object": "list", "data": [{"id": "canned-coder", "object": "model"}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            calls.append(body)
            with open(log_path, "w") as f:
                json.dump(calls, f)
            answer = answers[min(len(calls), len(answers)) - 1]
            message = {"role": "assistant", "content": answer}
            self._send({"model": "canned-coder", "choices": [{"index": 0, "message": message}]})

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


def lift_answer():
    """The hand-written lift program, written out as a model would answer (ANSWER_FORMAT)."""
    program = load_program(LIFT)
    blocks = [
        f"SUBTASK {i}: {s.name} - {s.description}\n```python\n{s.source}```\n"
        for i, s in enumerate(program.subtasks, 1)
    ]
    return "Here is the decomposition.\n\n" + "\n".join(blocks)


@pytest.fixture
def canned_server(tmp_path):
    started = []

    def start(answers):
        port = _free_port()
        (tmp_path / "answers.json").write_text(json.dumps(answers))
        script = tmp_path / "canned_server.py"
        script.write_text(CANNED_SERVER)
        argv = [
            sys.executable,
            str(script),
            str(port),
            str(tmp_path / "answers.json"),
            str(tmp_path / "calls.json"),
        ]
        started.append(_start(argv, port, tmp_path / "canned.log"))
        return f"http://127.0.0.1:{port}/v1", tmp_path / "calls.json"

    yield start
    for proc, log in started:
        _stop(proc, log)


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vlmrl reward-program: error: "), err
    return err[0]


@pytest.mark.slow
def test_serve_cannot_write_programs_text_request_is_refused_in_one_line(serve_url, tmp_path, capsys):
    code = cli.main(
        ["reward-program", "generate", "--llm.base-url", serve_url, "--llm.api-key", "sekret",
         "--out-dir", str(tmp_path / "out"), *FAST]
    )  # fmt: skip
    assert code == 1
    line = _one_line_error(capsys)
    assert "HTTP 400" in line and "no images" in line and "only scores clips" in line
    assert not (tmp_path / "out").exists()  # no answer came back: nothing to keep


@pytest.mark.slow
def test_serve_garbage_answer_is_rejected_with_audit_trail(serve_url, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(
        ["reward-program", "generate", "--llm.base-url", serve_url, "--llm.api-key", "sekret", "--frames",
         "--retries", "1", "--out-dir", str(out), *FAST]
    )  # fmt: skip
    assert code == 1
    line = _one_line_error(capsys)
    assert "rejected after 2 attempt(s)" in line and "no 'SUBTASK n:' blocks" in line
    (kept,) = out.iterdir()
    assert kept.name == "lift-v1.rejected.json"
    record = json.loads(kept.read_text())
    assert record["status"] == "rejected" and record["subtasks"] == []
    first, second = record["audit"]["attempts"]
    assert first["answer"] in ("yes", "no") and first["frames_sent"] == 2
    assert "SUBTASK 1:" in first["prompt"] and "obs.object_pos_m" in first["prompt"]
    assert "previous answer was rejected" in second["prompt"]  # the failure went back to the model
    code = cli.main(["reward-program", "verify", "--program", str(kept)])
    assert code == 1 and "kept for audit only" in _one_line_error(capsys)


@pytest.mark.slow
def test_generate_retries_then_verifies_then_trains(canned_server, tmp_path, capsys):
    hostile = "SUBTASK 1: escape - try\n```python\ndef check(obs):\n    return ().__class__\n```\n"
    url, calls = canned_server([hostile, lift_answer()])
    out = tmp_path / "out"
    code = cli.main(
        ["reward-program", "generate", "--llm.base-url", url, "--retries", "2", "--out-dir", str(out), *FAST]
    )
    assert code == 0, capsys.readouterr().err
    stdout = capsys.readouterr().out
    assert "attempt 1 rejected: the model's answer: sub-task 1 (escape): line 2: attribute" in stdout
    assert "verdict: PASS on 2 expert and 2 random episodes" in stdout
    program = load_program(out / "lift-v1.json")
    assert program.author == "model" and program.status == "verified"
    assert [s.name for s in program.subtasks] == ["reach", "grasp", "lift"]
    assert [a["model"] for a in program.audit["attempts"]] == ["canned-coder", "canned-coder"]
    sent = json.loads(calls.read_text())
    assert "line 2: attribute" in sent[1]["messages"][1]["content"]
    # a second generation never overwrites the first
    url, _ = canned_server([lift_answer()])
    assert cli.main(["reward-program", "generate", "--llm.base-url", url, "--out-dir", str(out), *FAST]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["lift-v1.json", "lift-v2.json"]
    assert cli.main(["reward-program", "verify", "--program", str(out / "lift-v2.json"), *FAST]) == 0
    # a privileged program (it reads the cube's pose) is refused where it would run on the arm itself
    assert (
        cli.main(["reward-program", "verify", "--program", str(out / "lift-v2.json"), "--target", "robot"])
        == 1
    )
    assert "simulation-only fields" in _one_line_error(capsys)
    # and trains: a few hundred state-only steps with the generated program's dense reward
    run = tmp_path / "run"
    train_args = ["train", "--sim.task", "lift", "--sim.cameras", "--sim.action-mode", "delta", "--replay", "uniform",
                  "--total-steps", "150", "--learning-starts", "100", "--batch-size", "16", "--eval-every-steps", "150",
                  "--eval-episodes", "1", "--video-episodes", "0", "--agent.hidden-dims", "16", "16", "--no-progress",
                  "--run-dir", str(run), "--reward-program", str(out / "lift-v1.json")]  # fmt: skip
    assert cli.main(train_args) == 0, capsys.readouterr().err
    report = (run / "report.md").read_text()
    assert "generated by a model" in report and "| 1. reach | 2. grasp | 3. lift |" in report

"""`vlmrl reward-program generate|verify`: Code as Reward (VLM-CaR) programs for the SO-101 twin.

generate: asks an OpenAI-compatible (V)LM (the ``scorer:openai`` client settings, under ``--llm.*``) to
split the task into sub-tasks and write one checker per sub-task, checks the code against the sandbox's
allow-list, verifies it on scripted-expert and random-policy episodes, and writes a versioned file
(``<out-dir>/<task>-v<N>.json``) that keeps every prompt, the model id and every answer; an answer that
fails is sent back with the reason up to ``--retries`` times, and a generation that never passes is kept
as ``<task>-v<N>.rejected.json`` for audit (never usable for rewards). verify: the same verification of
an existing file, with a table per checker and a one-line verdict. Train with it:
`vlmrl train --reward-program FILE`. Generation quality depends entirely on the model.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

from sim import make_env
from sim.config import SimConfig
from sim.so101.scripted import ScriptedPolicy
from vlm.config import OpenAIConfig
from vlm.reward_program import (
    ProgramFileError,
    RewardProgram,
    Sandbox,
    SandboxConfig,
    SandboxError,
    Verification,
    bind_verification,
    isolation_lines,
    load_program,
    next_version_path,
    parse_answer,
    save_program,
    verify,
)
from vlm.reward_program.generate import ask_model, build_prompt
from vlmrl.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class VerifySettings:
    """Which episodes a program is verified on, and how strict the check is."""

    expert_episodes: int = 10
    """Episodes of the twin's scripted expert; each checker must be true at the end of every successful one."""
    random_episodes: int = 10
    """Uniform-random-policy episodes; each checker must be (almost) never true on them."""
    max_random_true_frac: float = 0.05
    """Largest share of random-policy steps on which a checker may be true."""
    seed: int = 0
    """Seed of the verification episodes."""
    action_mode: str = "delta"
    """The twin's action mode for the episodes (the random policy samples in it)."""


@dataclass(frozen=True, kw_only=True)
class GenerateCommand:
    """Generate a reward program with a (V)LM, verify it, write it with its audit trail."""

    llm: OpenAIConfig = field(default_factory=OpenAIConfig)
    """The OpenAI-compatible endpoint (same settings as ``scorer:openai``: base URL, model, key, timeout)."""
    task: str = "lift"
    """SO-101 twin task (reach, lift, push, place); its description is the prompt's task unless given."""
    description: str = ""
    """Task description for the prompt; empty: the twin task's own description."""
    frames: bool = False
    """Also send the first frame of an episode and a goal frame (the expert's last), front camera."""
    max_tokens: int = 2048
    """Answer length limit."""
    temperature: float = 0.2
    """Sampling temperature."""
    retries: int = 0
    """Ask again this many times, with the failure in the prompt, when an answer is refused or fails."""
    out_dir: Path = Path("reward_programs")
    """Where versioned program files go (never overwritten)."""
    verification: VerifySettings = field(default_factory=VerifySettings)
    """Episodes and thresholds of the verification."""
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    """Time and memory limits of the program worker."""


@dataclass(frozen=True, kw_only=True)
class VerifyCommand:
    """Verify a reward-program file on scripted-expert and random-policy episodes of the twin."""

    program: Path
    """The program file (``vlmrl reward-program generate`` output, or hand-written)."""
    target: str = "sim"
    """sim: the reward is computed in simulation (any field); robot: on a real arm (simulation-only fields refused)."""
    record: bool = True
    """Write the table and verdict into the file (status verified / failed verification), bound to the
    program's and the checker's sha256 (training refuses a record that does not match)."""
    verbose: bool = False
    """Also print the sandbox worker's isolation: its user, namespaces and resource limits, and what this
    machine did not allow."""
    verification: VerifySettings = field(default_factory=VerifySettings)
    """Episodes and thresholds of the verification."""
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    """Time and memory limits of the program worker."""


Config = (
    Annotated[GenerateCommand, tyro.conf.subcommand("generate")]
    | Annotated[VerifyCommand, tyro.conf.subcommand("verify")]
)


def main(cfg: GenerateCommand | VerifyCommand) -> int:
    """Run one sub-command; 0 when the program passes (user errors raise one-line project errors)."""
    if isinstance(cfg, GenerateCommand):
        return run_generate(cfg)
    return run_verify(cfg)


class _Episodes:
    """Expert and random verification episodes of one task, collected on first use."""

    def __init__(self, task: str, settings: VerifySettings) -> None:
        self.task, self.settings = task, settings
        self._cache: tuple[list, list] | None = None

    def get(self) -> tuple[list, list]:
        from vlmrl.scorers.car_reward import collect_episodes

        if self._cache is None:
            s = self.settings
            sim = SimConfig(task=self.task, cameras=(), action_mode=s.action_mode)  # type: ignore[arg-type]
            expert = [e for e in collect_episodes(sim, "expert", s.expert_episodes, s.seed) if e.success]
            random = [
                e for e in collect_episodes(sim, "random", s.random_episodes, s.seed + 1) if not e.success
            ]
            self._cache = (expert, random)
        return self._cache


def check_settings(settings: VerifySettings, task: str) -> None:
    from sim.so101.tasks import TASKS

    if task not in TASKS:
        raise ConfigError(f"unknown SO-101 task {task!r}; expected one of {sorted(TASKS)}")
    if settings.expert_episodes < 1 or settings.random_episodes < 0:
        raise ConfigError("verification needs expert_episodes >= 1 and random_episodes >= 0")
    if settings.action_mode not in ("absolute", "delta", "ee_delta"):
        raise ConfigError(f"action_mode must be absolute, delta or ee_delta, got {settings.action_mode!r}")


def verify_sources(
    names: list[str], sources: list[str], episodes: _Episodes, settings: VerifySettings, sandbox: Sandbox
) -> Verification:
    """Load the sources into the sandbox and judge them on the episodes."""
    from vlmrl.scorers.car_reward import evaluate_episodes

    sandbox.load(sources)
    expert, random = episodes.get()
    return verify(
        names,
        evaluate_episodes(sandbox, expert),
        evaluate_episodes(sandbox, random),
        settings.max_random_true_frac,
    )


def print_verification(result: Verification) -> None:
    print(result.table())
    print(f"verdict: {result.verdict()}")


def run_verify(cfg: VerifyCommand) -> int:
    from vlmrl.scorers.car_reward import check_program_target

    if cfg.target not in ("sim", "robot"):
        raise ConfigError(f"target must be sim or robot, got {cfg.target!r}")
    program = load_program(cfg.program)
    check_settings(cfg.verification, program.task)
    check_program_target(program, cfg.target == "robot", str(cfg.program))
    with Sandbox(cfg.sandbox) as sandbox:
        result = verify_sources(
            [s.name for s in program.subtasks],
            [s.source for s in program.subtasks],
            _Episodes(program.task, cfg.verification),
            cfg.verification,
            sandbox,
        )
        if cfg.verbose:
            print("\n".join(isolation_lines(sandbox.isolation)))
    print_verification(result)
    if cfg.record:
        status = "verified" if result.passed else "failed verification"
        record = bind_verification(_record(result), program.task, program.subtasks)
        save_program(dataclasses.replace(program, verification=record, status=status), cfg.program)
    if not result.passed:
        raise ConfigError(f"{cfg.program}: {result.verdict()}")
    return 0


def _record(result: Verification) -> dict[str, object]:
    return {**result.as_dict(), "table": result.table(), "verdict": result.verdict(), "time_utc": _now()}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def task_frames(task: str) -> list[np.ndarray]:
    """The first frame of an expert episode and its last (goal) frame, front camera, 256 px."""
    env = make_env(SimConfig(task=task, cameras=("front",), image_size=256, action_mode="delta"))
    try:
        obs, _ = env.reset(seed=0)
        first = obs["pixels/front"]
        expert = ScriptedPolicy(env)
        while True:
            obs, _, terminated, truncated, _ = env.step(expert.act(obs))
            if terminated or truncated:
                return [first, obs["pixels/front"]]
    finally:
        env.close()


def run_generate(cfg: GenerateCommand) -> int:
    from sim.so101.tasks import TASKS

    check_settings(cfg.verification, cfg.task)
    if cfg.retries < 0 or cfg.max_tokens < 1:
        raise ConfigError("retries must be >= 0 and max_tokens >= 1")
    description = cfg.description or TASKS[cfg.task]().description
    frames = task_frames(cfg.task) if cfg.frames else []
    episodes = _Episodes(cfg.task, cfg.verification)
    attempts: list[dict[str, object]] = []
    feedback, accepted = "", None
    with Sandbox(cfg.sandbox) as sandbox:
        for attempt in range(cfg.retries + 1):
            prompt = build_prompt(description, feedback, with_frames=bool(frames))
            model_id, answer = ask_model(cfg.llm, prompt, frames, cfg.max_tokens, cfg.temperature)
            record: dict[str, object] = {
                "attempt": attempt + 1, "time_utc": _now(), "model": model_id, "base_url": cfg.llm.base_url,
                "frames_sent": len(frames), "prompt": prompt, "answer": answer,
            }  # fmt: skip
            attempts.append(record)
            try:
                subtasks = parse_answer(answer)
                result = verify_sources(
                    [s.name for s in subtasks],
                    [s.source for s in subtasks],
                    episodes,
                    cfg.verification,
                    sandbox,
                )
            except (ProgramFileError, SandboxError) as exc:
                feedback = str(exc)
            else:
                print(f"attempt {attempt + 1}:")
                print_verification(result)
                if result.passed:
                    accepted = (subtasks, result)
                    record["result"] = "verified"
                    break
                feedback = result.reason
            record["result"] = f"rejected: {feedback}"
            print(f"vlmrl reward-program generate: attempt {attempt + 1} rejected: {feedback}")
    audit = {"attempts": attempts, "endpoint": cfg.llm.base_url, "task_description": description}
    if accepted is None:
        path = next_version_path(cfg.out_dir, cfg.task)
        path = path.with_name(path.stem + ".rejected.json")
        program = RewardProgram(task=cfg.task, subtasks=(), author="model", audit=audit, status="rejected")
        save_program(program, path, reason=feedback)
        raise ConfigError(
            f"the model's reward program was rejected after {len(attempts)} attempt(s): {feedback} "
            f"(prompts and answers kept in {path})"
        )
    subtasks, result = accepted
    program = RewardProgram(
        task=cfg.task,
        subtasks=subtasks,
        author="model",
        audit=audit,
        verification=bind_verification(_record(result), cfg.task, subtasks),
        status="verified",
    )
    path = save_program(program, next_version_path(cfg.out_dir, cfg.task))
    print(f"vlmrl reward-program generate: wrote {path} ({len(subtasks)} sub-tasks, verified)")
    return 0

"""Code as Reward (VLM-CaR, issue #17): reward programs a (V)LM writes, checked, verified, sandboxed.

``view`` documents what a program may read; ``checker`` is the AST allow-list; ``sandbox`` runs programs
in a resource-limited worker process; ``program`` reads and writes program files and parses model answers;
``verify`` judges checkers on episodes and computes the dense reward; ``generate`` asks an
OpenAI-compatible endpoint. Imports nothing else of the project.
"""

from vlm.reward_program.checker import CheckedProgram, ProgramRejected, check_program
from vlm.reward_program.program import (
    ProgramFileError,
    RewardProgram,
    Subtask,
    bind_verification,
    checker_version,
    load_program,
    next_version_path,
    parse_answer,
    save_program,
    verification_problem,
)
from vlm.reward_program.sandbox import Sandbox, SandboxConfig, SandboxError, SubtaskResult, isolation_lines
from vlm.reward_program.verify import Verification, dense_reward, verify
from vlm.reward_program.view import FIELDS_BY_NAME, ROBOT_FIELDS, VIEW_FIELDS, view_api_text

__all__ = [
    "FIELDS_BY_NAME",
    "ROBOT_FIELDS",
    "VIEW_FIELDS",
    "CheckedProgram",
    "ProgramFileError",
    "ProgramRejected",
    "RewardProgram",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "Subtask",
    "SubtaskResult",
    "Verification",
    "bind_verification",
    "check_program",
    "checker_version",
    "dense_reward",
    "isolation_lines",
    "load_program",
    "next_version_path",
    "parse_answer",
    "save_program",
    "verification_problem",
    "verify",
    "view_api_text",
]

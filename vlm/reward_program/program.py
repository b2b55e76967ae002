"""Reward-program files: sub-tasks with one checker each, plus the audit trail (issue #17).

A file is JSON (``FORMAT``, ``VERSION``): the task, who wrote it (``author``: "person" or "model"), the
sub-tasks in order (name, description, source defining ``check(obs)`` and optionally ``progress(obs)``),
the view fields it reads, whether it is privileged (reads simulation-only fields), the verification
result, and for generated programs every request: prompt, model id, endpoint and the raw answer.
Generated files are never overwritten: ``next_version_path`` picks ``<stem>-v<N>.json``.

A verification record is bound to what was verified (issue #36): ``program_sha256`` (the task and every
sub-task's name and source) and ``checker_sha256`` (``checker_version``: the allow-list and the worker
that ran it). ``verification_problem`` says why a file's ``"status": "verified"`` does not hold for its
program (hand-made, edited since, or verified by another checker), and training refuses such a file.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vlm.errors import VLMError
from vlm.reward_program import checker, worker
from vlm.reward_program.checker import ProgramRejected, check_program
from vlm.reward_program.view import ROBOT_FIELDS

FORMAT = "vlmrl-reward-program"
VERSION = 1
MAX_SUBTASKS = 8


class ProgramFileError(VLMError):
    """A reward-program file or model answer that cannot be used (one line)."""


@dataclass(frozen=True)
class Subtask:
    """One step of the task and the code that says whether it is done."""

    name: str
    description: str
    source: str


@dataclass(frozen=True)
class RewardProgram:
    """Sub-task checkers in order, with provenance."""

    task: str
    subtasks: tuple[Subtask, ...]
    author: str
    """"person" (hand-written) or "model" (generated)."""
    audit: dict[str, Any] = field(default_factory=dict)
    """Generation record: prompts, model id, base URL, answers, attempts; empty for hand-written files."""
    verification: dict[str, Any] = field(default_factory=dict)
    """The last verification's table and verdict (``vlmrl reward-program verify``)."""
    status: str = "unverified"
    """unverified, verified, or rejected (a failed generation kept for audit; never used for rewards)."""

    @property
    def fields(self) -> frozenset[str]:
        """View fields any sub-task reads."""
        return frozenset().union(*(check_program(s.source).fields for s in self.subtasks))

    @property
    def privileged(self) -> bool:
        """True when it reads a field a real arm does not provide."""
        return bool(self.fields - ROBOT_FIELDS)

    def to_json(self) -> dict[str, Any]:
        data = {"format": FORMAT, "version": VERSION, **asdict(self)}
        data["subtasks"] = [asdict(s) for s in self.subtasks]
        data["fields_read"] = sorted(self.fields) if self.status != "rejected" else []
        data["privileged"] = self.privileged if self.status != "rejected" else None
        return data


def program_digest(task: str, subtasks: tuple[Subtask, ...]) -> str:
    """sha256 of what a verification judged: the task and each sub-task's name and source, in order."""
    data = {"task": task, "subtasks": [[s.name, s.source] for s in subtasks]}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def checker_version() -> str:
    """sha256 of the allow-list and the worker's source files: a verification holds for these only."""
    digest = hashlib.sha256()
    for module in (checker, worker):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()


def bind_verification(record: dict[str, Any], task: str, subtasks: tuple[Subtask, ...]) -> dict[str, Any]:
    """``record`` (a verification's table and verdict) with the digests of what it verified."""
    return {**record, "program_sha256": program_digest(task, subtasks), "checker_sha256": checker_version()}


def verification_problem(program: RewardProgram) -> str:
    """Why ``program``'s status "verified" does not hold (one line), or "" when its record matches it."""
    record = program.verification
    if program.status != "verified":
        return f"the reward program is {program.status}"
    if not record.get("passed") or "program_sha256" not in record or "checker_sha256" not in record:
        return "its verification record is not bound to its source (no sha256: made by hand, or verified before records were bound)"
    if record["program_sha256"] != program_digest(program.task, program.subtasks):
        return "its sub-tasks changed since it was verified (the source's sha256 differs from the record's)"
    if record["checker_sha256"] != checker_version():
        return "it was verified by another version of the checker (the checker's sha256 differs)"
    return ""


def check_subtasks(subtasks: tuple[Subtask, ...], where: str) -> None:
    """ProgramFileError naming the sub-task whose source the allow-list refuses."""
    if not subtasks:
        raise ProgramFileError(f"{where}: no sub-tasks")
    if len(subtasks) > MAX_SUBTASKS:
        raise ProgramFileError(f"{where}: {len(subtasks)} sub-tasks, at most {MAX_SUBTASKS}")
    for i, subtask in enumerate(subtasks, 1):
        try:
            check_program(subtask.source)
        except ProgramRejected as exc:
            raise ProgramFileError(f"{where}: sub-task {i} ({subtask.name}): {exc}") from None


def load_program(path: str | Path) -> RewardProgram:
    """Read and check a program file; refuses other formats, newer versions and rejected generations."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ProgramFileError(f"{path}: no such reward-program file") from None
    except (OSError, ValueError) as exc:
        raise ProgramFileError(f"{path}: not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ProgramFileError(f"{path}: not a reward-program file (format must be {FORMAT!r})")
    if data.get("version") != VERSION:
        raise ProgramFileError(
            f"{path}: version {data.get('version')!r} is not supported (expected {VERSION})"
        )
    if data.get("status") == "rejected":
        raise ProgramFileError(
            f"{path}: this generation was rejected ({data.get('reason', 'see audit')}); kept for audit only"
        )
    try:
        subtasks = tuple(
            Subtask(str(s["name"]), str(s.get("description", "")), str(s["source"])) for s in data["subtasks"]
        )
        program = RewardProgram(
            task=str(data["task"]),
            subtasks=subtasks,
            author=str(data.get("author", "")),
            audit=dict(data.get("audit") or {}),
            verification=dict(data.get("verification") or {}),
            status=str(data.get("status", "unverified")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ProgramFileError(f"{path}: malformed reward-program file (missing or bad {exc})") from None
    if program.author not in ("person", "model"):
        raise ProgramFileError(f"{path}: author must be 'person' or 'model', got {program.author!r}")
    check_subtasks(program.subtasks, str(path))
    return program


def save_program(program: RewardProgram, path: str | Path, reason: str = "") -> Path:
    """Write the file (atomically: a temporary file renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = program.to_json()
    if reason:
        data["reason"] = reason
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
    return path


def next_version_path(out_dir: str | Path, stem: str) -> Path:
    """``<out_dir>/<stem>-v<N>.json`` with N one above any version already there (accepted or rejected)."""
    out_dir = Path(out_dir)
    taken = [0]
    if out_dir.is_dir():
        for p in out_dir.iterdir():
            m = re.fullmatch(re.escape(stem) + r"-v(\d+)(?:\.rejected)?\.json", p.name)
            if m:
                taken.append(int(m.group(1)))
    return out_dir / f"{stem}-v{max(taken) + 1}.json"


ANSWER_FORMAT = """Answer in exactly this format, one block per sub-task, in the order they must be completed:

SUBTASK 1: <short_name> - <one sentence saying what is true when it is done>
```python
def check(obs):
    return <expression that is True when the sub-task is done>

def progress(obs):
    return <optional: a number from 0.0 to 1.0 saying how close the sub-task is to done>
```
SUBTASK 2: ...

Rules for the code: only arithmetic, comparisons, if/else, `for i in range(<int literal>)`, numpy as `np`
(np.linalg.norm, np.abs, np.clip, np.minimum, np.maximum, np.dot, np.sqrt, ...) and math as `math`;
read only the fields of `obs` listed above; no imports, no other attributes or methods (write
np.max(x), not x.max()), no while loops, no comprehensions, no names starting with an underscore.
Later sub-tasks must imply the earlier ones still hold where that makes sense (a lifted cube is grasped)."""

_HEADER = re.compile(
    r"^[^\w\n]*SUBTASK[ \t]+(\d+)[ \t]*[:.)-][ \t]*(.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE
)
_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def parse_answer(answer: str) -> tuple[Subtask, ...]:
    """Sub-tasks from a model answer in ``ANSWER_FORMAT``; ProgramFileError (one line) if there are none
    or one has no code block."""
    if not isinstance(answer, str) or not answer.strip():
        raise ProgramFileError("the model's answer is empty")
    headers = list(_HEADER.finditer(answer))
    if not headers:
        snippet = " ".join(answer.split())[:60]
        raise ProgramFileError(f"the model's answer has no 'SUBTASK n:' blocks (it starts {snippet!r})")
    subtasks = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(answer)
        body = answer[header.end() : end]
        code = _CODE.search(body)
        if code is None:
            raise ProgramFileError(
                f"the model's answer has no ```python block under SUBTASK {header.group(1)}"
            )
        title = header.group(2).strip("*_ ")
        name, _, description = title.partition(" - ")
        name = re.sub(r"[^A-Za-z0-9_]+", "_", name.strip()).strip("_")[:40] or f"subtask_{i + 1}"
        subtasks.append(Subtask(name, description.strip() or title, code.group(1).strip() + "\n"))
    result = tuple(subtasks)
    check_subtasks(result, "the model's answer")
    return result

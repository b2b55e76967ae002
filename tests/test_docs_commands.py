"""The documentation cannot drift from the CLI: every `vlmrl ...` command in README.md and docs/*.md parses with
its verb's parser and passes the verb's config checks, and every relative link resolves.

Commands are taken from fenced code blocks (not ``python`` ones; backslash-continued lines joined, ``$ ``
prompts and ``# comments`` dropped) and from inline code spans that begin with ``vlmrl <verb>``. Spans that
elide part of a command with ``...`` and ``--help`` lines are not commands to check. Placeholders are given
plausible values before parsing: ``<run>``-style and ``$VAR`` words by name (``PLACEHOLDERS``), bare
upper-case words that stand for numbers (``N``, ``STEPS``) when they are a whole argument, and ``a|b|c``
alternatives are each checked. Nothing runs: the test calls ``tyro.cli(module.Config, args=...)`` for the
verb's module in ``vlmrl.cli.VERBS`` (what ``vlmrl`` itself calls), then the verb's pure checks (``CHECKS``):
``vlmrl train`` applies ``--demo`` and ``--recipe`` as a run would, then ``check_config``; every SimConfig
in a config goes through ``sim.factory.validate_config``; scorer strings (``--compare``, ``--scorer``) go
through ``parse_scorer``. A command that needs an earlier command's output (a run directory, a store) is
checked as written, not run: its paths need not exist.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import itertools
import os
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vlmrl.cli import VERBS
from vlmrl.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250

PLACEHOLDERS = {
    # <name> and $NAME words (case-insensitive): a value of the kind the option expects
    "run": "train-lift-20261201-120000",  # as in runs/<run>
    "run_dir": "runs/train-lift-20261201-120000",
    "id": "so101-arm",
    "text model": "Qwen/Qwen2.5-7B-Instruct",
    "n": "2",
    "steps": "1000",
    "seed": "0",
    "task": "lift",
}
NUMBER_WORDS = {
    "N": "2",
    "M": "2",
    "STEPS": "1000",
    "W": "0.4",
    "S": "0.5",
    "R": "0.005",
    "X": "0.3",
    "P": "0.2",
}
"""Bare upper-case words the docs use for a number (``--prior-share S``), replaced when a whole argument."""


@dataclasses.dataclass(frozen=True)
class DocCommand:
    """One documented command: where it is and its words as written."""

    path: Path
    line: int
    text: str
    fragment: bool = False
    """An inline span in prose: it names options, so it may leave out required ones (they are not missed)."""

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line number of the block's first line, info string, lines) of each fenced code block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*(`{3,}|~{3,})(.*)$", lines[i])
        if not fence:
            i += 1
            continue
        marker, info = fence[1], fence[2].strip()
        body_start = i + 1
        j = body_start
        while j < len(lines) and not lines[j].strip().startswith(marker):
            j += 1
        yield body_start + 1, info, lines[body_start:j]
        i = j + 1


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    inside = {n for start, _, body in fenced_blocks(text) for n in range(start - 1, start + len(body) + 1)}
    for n, line in enumerate(text.splitlines(), start=1):
        if n not in inside:
            yield n, line


def documented_commands(path: Path) -> list[DocCommand]:
    """The `vlmrl <verb> ...` commands of one Markdown file."""
    text = path.read_text(encoding="utf-8")
    found = []
    for start, info, body in fenced_blocks(text):
        if info.split()[:1] not in ([], ["bash"], ["sh"], ["shell"], ["console"]):
            continue  # python, json, text: not shell
        n = 0
        while n < len(body):
            first, words = n, body[n].rstrip()
            while words.endswith("\\") and n + 1 < len(body):
                n += 1
                words = words[:-1].rstrip() + " " + body[n].strip()
            n += 1
            words = re.sub(r"^\s*\$\s+", "", words).strip()
            if words.startswith("vlmrl "):
                found.append(DocCommand(path, start + first, words))
    for n, line in prose_lines(text):
        for span in re.findall(r"`(vlmrl [^`]+)`", line):
            verb = span.split()[1]
            if verb in VERBS and "..." not in span and len(span.split()) > 2:
                found.append(DocCommand(path, n, span, fragment=True))
    return [c for c in found if "--help" not in c.text.split()]


def substitute(text: str) -> str:
    """``text`` with its ``<name>`` and ``$NAME`` placeholders given plausible values."""

    def value(name: str) -> str:
        return PLACEHOLDERS.get(name.lower(), name.lower().replace(" ", "-"))

    text = re.sub(r"<([^<>]+)>", lambda m: value(m[1]), text)
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: value(m[1]), text)


def argument_lists(command: DocCommand) -> list[list[str]]:
    """The command's words after ``vlmrl <verb>``, once per combination of its ``a|b`` alternatives."""
    words = [NUMBER_WORDS.get(w, w) for w in shlex.split(substitute(command.text), comments=True)][2:]
    choices = [w.split("|") if "|" in w and not w.startswith("-") else [w] for w in words]
    return [list(combo) for combo in itertools.product(*choices)]


class DocError(Exception):
    """A documented command that the CLI refuses."""


INCOMPLETE = ("Required options", "Missing argument", "Missing subcommand")
"""tyro's headings for a command that leaves something out (allowed in an inline fragment)."""


def parse(verb: str, args: list[str]) -> Any:
    """The config `vlmrl verb args` builds, parsed exactly as ``vlmrl.cli.main`` parses it."""
    import tyro

    module = importlib.import_module(VERBS[verb][0])
    out = io.StringIO()
    os.environ.setdefault("COLUMNS", "200")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            # As vlmrl.cli.main: a verb may give its own defaults (`vlmrl train --recipe`).
            default = module.cli_default(args) if hasattr(module, "cli_default") else None
            given = {"default": default} if default is not None else {}
            return tyro.cli(
                module.Config, args=args, prog=f"vlmrl {verb}", description=module.__doc__, **given
            )
    except ConfigError as exc:  # a verb's own defaults refused the command (`--recipe` on another suite)
        raise DocError(str(exc)) from None
    except SystemExit:
        said = []
        for line in out.getvalue().splitlines():
            line = line.strip(" │╭╮╰╯─-")
            if line.startswith(("Perhaps you meant", "Available subcommands", "For full helptext")):
                break  # tyro's suggestions and help pointers: the problem itself is above them
            if line:
                said.append(line)
        if len(said) > 1 and said[1].lower().startswith(said[0].lower()):
            said = said[1:]  # the box's heading repeated by its first line
        raise DocError(" ".join(said) or "the parser exited") from None


def check_train(cfg: Any) -> None:
    from vlmrl.online.config import check_config
    from vlmrl.pipelines.train import demo_config

    if cfg.resume:
        return  # the run's saved config is checked when it resumes
    if cfg.demo:
        cfg = demo_config(cfg)
    check_config(cfg)  # a recipe is already applied by the parse (cli_default)


def check_pretrain(cfg: Any) -> None:
    from vlmrl.pipelines.pretrain import check

    check(cfg)


def check_finetune(cfg: Any) -> None:
    from vlmrl.pipelines.finetune import check_actor_settings

    check_actor_settings(cfg)


def check_reward_program(cfg: Any) -> None:
    from vlmrl.pipelines.reward_program import check_settings

    verification, task = getattr(cfg, "verification", None), getattr(cfg, "task", None)
    if verification is not None and task is not None:
        check_settings(verification, task)


CHECKS: dict[str, Callable[[Any], None]] = {
    "train": check_train,
    "pretrain": check_pretrain,
    "finetune": check_finetune,
    "reward-program": check_reward_program,
}
"""Verb -> its pure config checks (what the verb's ``main`` runs first, without touching files or envs)."""


def check_parts(cfg: Any) -> None:
    """Checks that apply wherever a part appears: sim configs, scorer strings, scorer pools."""
    from sim.config import SimConfig
    from sim.factory import validate_config
    from vlm.config import ScorerRayConfig
    from vlm.scorer_pool import check_ray_config
    from vlmrl.scorers.evaluation import parse_scorer

    seen: list[Any] = [cfg]
    while seen:
        part = seen.pop()
        if isinstance(part, SimConfig):
            validate_config(part)
        if isinstance(part, ScorerRayConfig):
            check_ray_config(part)
        if dataclasses.is_dataclass(part) and not isinstance(part, type):
            for field in dataclasses.fields(part):
                value = getattr(part, field.name)
                if field.name in ("compare", "scorer") and isinstance(value, str) and value:
                    parse_scorer(value, f"--{field.name}")
                if field.name == "compare" and isinstance(value, tuple | list):
                    for spec in value:
                        parse_scorer(spec, "--compare")
                seen.append(value)


def check_command(command: DocCommand) -> None:
    """Raises DocError naming the file and line when the command does not parse or its config is refused."""
    from vlmrl.errors import USER_ERRORS

    words = command.text.split()
    verb = words[1]
    if verb not in VERBS:
        raise DocError(f"{command.where()}: unknown verb {verb!r} in `{command.text}`")
    for args in argument_lists(command):
        try:
            cfg = parse(verb, args)
        except DocError as exc:
            if command.fragment and str(exc).startswith(INCOMPLETE):
                continue  # the options it names exist; what it leaves out is said around it
            raise DocError(
                f"{command.where()}: `vlmrl {verb} {shlex.join(args)}` is refused: {exc}"
            ) from None
        if command.fragment:
            continue  # options named in prose: their settings around them are not all written
        try:
            check_parts(cfg)
            CHECKS.get(verb, lambda cfg: None)(cfg)
        except USER_ERRORS as exc:
            raise DocError(
                f"{command.where()}: `vlmrl {verb} {shlex.join(args)}` is refused: {exc}"
            ) from None


COMMANDS = [c for path in DOCS for c in documented_commands(path)]


def test_the_docs_hold_commands_to_check():
    assert len(COMMANDS) >= 20, [c.where() for c in COMMANDS]
    assert {c.text.split()[1] for c in COMMANDS} >= {"train", "deploy", "finetune", "score", "record"}


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where() for c in COMMANDS])
def test_a_documented_command_parses_and_passes_its_checks(command):
    check_command(command)


def relative_links(path: Path) -> Iterator[tuple[int, str]]:
    """(line, target) of each Markdown link or image outside code that is not a URL."""
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                yield n, target


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file (lower case, punctuation dropped, spaces to hyphens)."""
    slugs: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[1].lower()).replace(" ", "-")
            suffix = 0
            while (slug + (f"-{suffix}" if suffix else "")) in slugs:
                suffix += 1
            slugs.add(slug + (f"-{suffix}" if suffix else ""))
    return slugs


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_relative_link_resolves(path):
    broken = []
    for n, target in relative_links(path):
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{path.relative_to(ROOT)}:{n}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{path.relative_to(ROOT)}:{n}: {target} (no heading #{anchor} there)")
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_door():
    """At most 250 lines, with the two commands in its first 30."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the guide is docs/"
    head = "\n".join(lines[:30])
    assert "make demo" in head and "make test" in head


def test_the_readme_verb_table_lists_every_verb():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `vlmrl ([a-z-]+)` \|", text, flags=re.MULTILINE)
    assert listed == list(VERBS), f"README's verb table {listed} != vlmrl.cli.VERBS {list(VERBS)}"


def test_the_guide_index_links_every_page():
    linked = {target.partition("#")[0] for _, target in relative_links(ROOT / "docs" / "index.md")}
    pages = {p.name for p in DOCS if p.parent.name == "docs" and p.name != "index.md"}
    assert pages <= linked, f"docs/index.md does not link {sorted(pages - linked)}"


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("vlmrl train --no-such-option 1", "Unrecognized options"),
        ("vlmrl train --replay fastest", "invalid choice 'fastest'"),
        ("vlmrl train --agent.bc-weight 0.4", "clones the prior part of each batch"),
        (
            "vlmrl train --recipe deployable --sim.suite metaworld --sim.task push-v3",
            "is for the SO-101 twin",
        ),
        ("vlmrl train --sim.randomize.preset wild", "wild"),
        ("vlmrl deploy --episodes 2", "Required options"),
        ("vlmrl score runs/rec/episodes.zarr --evaluate --compare 'scorer:nope'", "--compare 'scorer:nope'"),
        ("vlmrl teleport --to mars", "unknown verb 'teleport'"),
    ],
)
def test_the_checker_refuses_what_the_cli_would_naming_file_and_line(text, refusal):
    command = DocCommand(ROOT / "docs" / "page.md", 7, text)
    with pytest.raises(DocError, match=re.escape(refusal)) as refused:
        check_command(command)
    assert str(refused.value).startswith("docs/page.md:7: ")


def test_placeholders_get_values_and_alternatives_are_each_checked():
    command = DocCommand(
        ROOT / "README.md", 1, "vlmrl deploy --policy runs/<run>/best_policy.pt --episodes N"
    )
    assert argument_lists(command) == [
        ["--policy", "runs/train-lift-20261201-120000/best_policy.pt", "--episodes", "2"]
    ]
    either = DocCommand(ROOT / "README.md", 1, "vlmrl train --replay uniform|per  # a comment")
    assert argument_lists(either) == [["--replay", "uniform"], ["--replay", "per"]]
    with pytest.raises(DocError, match="invalid choice 'pre'"):
        check_command(DocCommand(ROOT / "README.md", 1, "vlmrl train --replay uniform|pre"))


def test_commands_are_found_across_continuations_and_inline_fragments_may_be_partial(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(
        "Intro `vlmrl finetune --from` names an option.\n\n"
        "```bash\n$ vlmrl train --sim.task reach \\\n    --total-steps 10   # short\nmake demo\n```\n\n"
        "```python\nvlmrl.train(cfg)\n```\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)  # where() names files relative to ROOT
    found = documented_commands(page)
    assert [(c.line, c.text, c.fragment) for c in found] == [
        (4, "vlmrl train --sim.task reach --total-steps 10   # short", False),
        (1, "vlmrl finetune --from", True),
    ]
    for command in found:
        check_command(command)  # the fragment leaves out --from's value: allowed in prose

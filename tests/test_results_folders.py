"""`results/` is a record anyone can rerun (issue 37, item 6): every study folder holds a `README.md` (the
question, the answer, commit and CPU) and one `reproduce.sh OUT` in bash strict mode; no file under `results/`
names one machine's scratch folders or waits on a process id; and each script, run with
``REPRODUCE_DRY_RUN=1`` (the convention of `results/lib.sh`), prints its commands without running them: every
`vlmrl ...` one parses with its verb's parser and passes its config checks (the docs test's checker), and
every script or program file a command names exists.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def repository_files(folder: Path) -> list[Path]:
    """The files under ``folder`` that git tracks or would add (ignored build output such as __pycache__ left out)."""
    listed = subprocess.run(
        [
            "git",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
            str(folder.relative_to(ROOT)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file())


STUDIES = sorted(
    {RESULTS / p.relative_to(RESULTS).parts[0] for p in repository_files(RESULTS) if p.parent != RESULTS}
)

MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|tmp|home|root)/")
"""An absolute path into one machine's scratch or home folders."""
PROCESS_WAIT = re.compile(r"\bwait\s+\d+|\bkill\s+-0\b|\.pid\b")
"""Waiting on a process id: `wait 123`, `kill -0 PID`, a `.pid` file."""
STRICT = re.compile(r"^set -euo pipefail$", re.MULTILINE)
NAMED_FILE = re.compile(r"^(?:benchmarks|results|examples|tools)/[\w./-]+\.(?:py|json|sh)$")
"""A command word naming a committed file (a script, a reward program): it must exist."""


def _docs_checker():
    """tests/test_docs_commands.py as a module: its DocCommand and check_command resolve a command through
    the CLI's parser and config checks without running it."""
    spec = importlib.util.spec_from_file_location("_docs_commands", ROOT / "tests" / "test_docs_commands.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


DOCS = _docs_checker()


def text_files(folder: Path) -> list[Path]:
    files = []
    for path in repository_files(folder):
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a figure
        files.append(path)
    return files


def machine_specifics(text: str) -> list[str]:
    """The lines of ``text`` that name a scratch path or wait on a process id."""
    return [
        line.strip() for line in text.splitlines() if MACHINE_PATH.search(line) or PROCESS_WAIT.search(line)
    ]


def dry_run(script: Path, out: Path) -> list[str]:
    """The commands ``script OUT`` would run, one a line, printed under REPRODUCE_DRY_RUN=1."""
    env = {**os.environ, "REPRODUCE_DRY_RUN": "1", "PYTHON": "python"}
    proc = subprocess.run(
        ["bash", str(script), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"{script} dry run failed:\n{proc.stderr}"
    return [line for line in proc.stdout.splitlines() if line.strip()]


def vlmrl_words(command: str) -> list[str] | None:
    """``vlmrl VERB ARGS`` of a printed `python -m vlmrl ...` command (None for other commands)."""
    words = shlex.split(command)
    for i in range(len(words) - 1):
        if words[i] == "-m" and words[i + 1] == "vlmrl":
            return ["vlmrl", *words[i + 2 :]]
    return None


def test_there_are_studies_and_the_helpers_exist():
    assert len(STUDIES) >= 10
    assert (RESULTS / "lib.sh").is_file()


@pytest.mark.parametrize("study", STUDIES, ids=[p.name for p in STUDIES])
def test_a_study_has_a_readme_and_one_reproduce_script(study):
    assert (study / "README.md").is_file(), f"results/{study.name} has no README.md"
    assert (study / "reproduce.sh").is_file(), f"results/{study.name} has no reproduce.sh"
    others = [p.name for p in study.glob("*") if p.suffix in (".sh", ".cmd") and p.name != "reproduce.sh"]
    others += [p.name for p in study.glob("command*.*")]
    assert not others, f"results/{study.name}: commands belong in reproduce.sh, not {others}"
    readme = (study / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\b[0-9a-f]{7,40}\b", readme), f"results/{study.name}/README.md names no commit"


@pytest.mark.parametrize("study", STUDIES, ids=[p.name for p in STUDIES])
def test_no_file_names_a_scratch_path_or_waits_on_a_process(study):
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for path in text_files(study)
        for line in machine_specifics(path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("study", STUDIES, ids=[p.name for p in STUDIES])
def test_reproduce_is_strict_bash_that_takes_the_output_folder(study):
    script = study / "reproduce.sh"
    text = script.read_text(encoding="utf-8")
    assert STRICT.search(text), f"{script.relative_to(ROOT)} lacks `set -euo pipefail`"
    assert "source results/lib.sh" in text and "${1:?" in text, f"{script.relative_to(ROOT)}: OUT=${{1:?...}}"
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    refused = subprocess.run(["bash", str(script)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "usage" in refused.stderr, "without OUT the script must refuse"


@pytest.mark.slow  # about 250 commands through the CLI's parser
@pytest.mark.parametrize("study", STUDIES, ids=[p.name for p in STUDIES])
def test_a_dry_run_prints_commands_that_parse(study, tmp_path):
    before = sorted(RESULTS.rglob("*"))
    commands = dry_run(study / "reproduce.sh", tmp_path / "out")
    assert commands, f"results/{study.name}/reproduce.sh printed no command"
    problems = []
    for n, command in enumerate(commands, start=1):
        missing = [w for w in shlex.split(command) if NAMED_FILE.match(w) and not (ROOT / w).exists()]
        problems += [f"command {n} names {w}, which does not exist: {command}" for w in missing]
        words = vlmrl_words(command)
        if words is None:
            continue
        try:
            DOCS.check_command(DOCS.DocCommand(study / "reproduce.sh", n, shlex.join(words)))
        except DOCS.DocError as exc:
            problems.append(str(exc))
    assert not problems, "\n".join(problems)
    assert sorted(RESULTS.rglob("*")) == before, "a dry run wrote into results/"


def test_the_checks_catch_what_they_are_for(tmp_path):
    assert machine_specifics("cd /work/exp14c && run\nwhile kill -0 25225; do sleep 5; done") == [
        "cd /work/exp14c && run",
        "while kill -0 25225; do sleep 5; done",
    ]
    assert machine_specifics('x $(cat runs/driver2.pid)\nwait 4242\n"data": "/tmp/d/episodes.zarr"') != []
    assert machine_specifics("runs/tmp/x and OUT/work/y, wait; results/lib.sh\nwait\n") == []
    assert vlmrl_words(".venv/bin/python -m vlmrl train --seed 0") == ["vlmrl", "train", "--seed", "0"]
    assert vlmrl_words("python benchmarks/viewer.py --quick") is None
    script = tmp_path / "reproduce.sh"
    script.write_text(
        "set -euo pipefail\nOUT=${1:?usage: reproduce.sh OUT}\nsource results/lib.sh\n"
        'vlmrl train --sim.task reach --no-such-option 1\nfinished "$OUT/x" || vlmrl deploy --episodes 2\n'
    )
    printed = dry_run(script, tmp_path / "out")
    assert [vlmrl_words(c)[:2] for c in printed] == [["vlmrl", "train"], ["vlmrl", "deploy"]]
    with pytest.raises(DOCS.DocError, match="Unrecognized options"):
        DOCS.check_command(DOCS.DocCommand(RESULTS / "reproduce.sh", 1, shlex.join(vlmrl_words(printed[0]))))

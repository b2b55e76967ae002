"""Every numeric option of `vlmrl train` is range-checked before anything runs (issue #36, item 3): a value
outside its range ends the command with exit code 1 and one line naming the option, never a traceback."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import subprocess
import sys
import typing
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vlmrl import cli
from vlmrl.config_ranges import RANGES, Range, check_ranges, numeric_types, option_name
from vlmrl.errors import ConfigError
from vlmrl.online.config import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
SCORERS = {"OracleConfig": "oracle", "HFConfig": "hf", "OpenAIConfig": "openai", "CLIPConfig": "clip",
           "LearnedConfig": "learned"}  # fmt: skip
"""Scorer config class -> its ``scorer:<name>`` subcommand."""


@dataclasses.dataclass(frozen=True)
class Option:
    """One numeric option of `vlmrl train` as the command line names it."""

    path: str
    valid: Range
    integer: bool
    tuple_: bool
    subcommand: str
    """``scorer:<name>`` for a scorer backend's option, else empty."""


def _options() -> list[Option]:
    """Every numeric option reachable from `TrainConfig` (the scorer backends of the scorer union included),
    found from the config classes' annotations, not from RANGES."""
    found: list[Option] = []

    def walk(cls: type, prefix: str, subcommand: str) -> None:
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):
            if cls.__name__ == "BufferConfig" and f.name == "sampler":
                continue  # not an option: --replay and the --<mode>-sampler.* settings choose the sampler
            for leaf in _leaves(hints[f.name]):
                if dataclasses.is_dataclass(leaf):
                    sub = subcommand or (
                        f"scorer:{SCORERS[leaf.__name__]}" if leaf.__name__ in SCORERS else ""
                    )
                    walk(leaf, f"{prefix}{f.name}.", sub)
            numbers = numeric_types(hints[f.name])
            if numbers:
                valid = RANGES.get(cls, {}).get(f.name)
                assert valid is not None, (
                    f"{cls.__name__}.{f.name} has no range in vlmrl.config_ranges.RANGES"
                )
                origin = typing.get_origin(hints[f.name])
                found.append(Option(prefix + f.name, valid, int in numbers, origin is tuple, subcommand))

    walk(TrainConfig, "", "")
    return found


def _leaves(annotation: typing.Any) -> list[typing.Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _leaves(typing.get_args(annotation)[0])
    if origin in (typing.Union, __import__("types").UnionType):
        return [leaf for arg in typing.get_args(annotation) for leaf in _leaves(arg)]
    return [annotation]


OPTIONS = _options()


def test_every_numeric_option_has_a_range_and_every_range_a_field() -> None:
    assert len(OPTIONS) > 120  # _options asserts each has a range
    for cls, ranges in RANGES.items():
        names = {f.name for f in dataclasses.fields(cls)}
        assert set(ranges) <= names, f"{cls.__name__}: ranges for fields it lacks: {set(ranges) - names}"
    check_ranges(TrainConfig())  # every default is valid


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--buffer.gamma", "1.5"], "--buffer.gamma"),
        (["--buffer.gamma", "0"], "--buffer.gamma"),
        (["--sim.image-size=-5"], "--sim.image-size"),
        (["--prior-share", "1.5"], "--prior-share"),
        (["--batch-size", "0"], "--batch-size"),
        (["--agent.tau", "0"], "--agent.tau"),
        (["--agent.hidden-dims", "16", "0"], "--agent.hidden-dims"),
        (["--torch-threads", "0"], "--torch-threads"),
        (["--vlm-sampler.lambda-end", "2"], "--vlm-sampler.lambda-end"),
        (["--worker.max-backlog", "0"], "--worker.max-backlog"),
        (["--buffer.frames-per-shard", "256"], "--buffer.frames-per-shard"),
        (["--iql.expectile", "1"], "--iql.expectile"),
        (["scorer:oracle", "--scorer.noise", "1.5"], "--scorer.noise"),
        (["--aux-reward-weight", "nan"], "--aux-reward-weight"),
    ],
)
def test_out_of_range_values_named_in_one_line(args: list[str], option: str) -> None:
    code, out, err = _train(args)
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith("vlmrl train: error: ") and f"({option})" in err and "Traceback" not in err


def test_the_real_command_exits_1_with_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vlmrl", "train", "--buffer.gamma", "1.5"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr == "vlmrl train: error: buffer.gamma must be in (0, 1], got 1.5 (--buffer.gamma)\n"


def test_the_python_api_gets_the_same_checks() -> None:
    with pytest.raises(ConfigError, match=r"^total_steps must be >= 1, got 0 \(--total-steps\)$"):
        check_ranges(TrainConfig(total_steps=0))
    with pytest.raises(ConfigError, match=r"^total_steps must be a whole number, got 2.5 \(--total-steps\)$"):
        check_ranges(TrainConfig(total_steps=2.5))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^buffer\.gamma must be a number, got True \(--buffer\.gamma\)$"):
        check_ranges(
            dataclasses.replace(TrainConfig(), buffer=dataclasses.replace(TrainConfig().buffer, gamma=True))
        )


@pytest.mark.parametrize("option", OPTIONS, ids=[o.path for o in OPTIONS])
def test_each_option_refuses_the_nearest_value_outside_its_range(option: Option) -> None:
    """Deterministic complement of the CLI fuzz: every option, without the command line's parsing cost."""
    valid = option.valid
    step = 1 if option.integer else 1e-9
    bad = [valid.low - (0 if valid.low_open else step)] if valid.low is not None else []
    bad += [valid.high + (0 if valid.high_open else step)] if valid.high is not None else []
    bad += [] if option.integer else [math.nan]
    for value in bad:
        value = int(value) if option.integer else value
        cfg = _with(TrainConfig(), option, (16, value) if option.tuple_ else value)
        with pytest.raises(ConfigError, match=rf"^{option.path} must be .*\({option_name(option.path)}\)$"):
            check_ranges(cfg)


def _with(cfg: typing.Any, option: Option, value: typing.Any) -> typing.Any:
    """``cfg`` with ``value`` at ``option.path`` (the scorer's backend switched to the option's first)."""
    if option.subcommand:
        from vlm import config as vlm_config

        name = {v: k for k, v in SCORERS.items()}[option.subcommand.removeprefix("scorer:")]
        cfg = dataclasses.replace(cfg, scorer=getattr(vlm_config, name)())

    def put(obj: typing.Any, parts: list[str]) -> typing.Any:
        if len(parts) == 1:
            return dataclasses.replace(obj, **{parts[0]: value})
        return dataclasses.replace(obj, **{parts[0]: put(getattr(obj, parts[0]), parts[1:])})

    return put(cfg, option.path.split("."))


def _out_of_range(option: Option) -> st.SearchStrategy[str]:
    """Values of the option's type outside its range, as the command line writes them."""
    valid = option.valid
    choices: list[st.SearchStrategy[float]] = []
    if valid.low is not None:
        low = valid.low
        if option.integer:
            top = int(low) if valid.low_open else int(low) - 1
            choices.append(st.integers(top - 1_000_000, top).map(float))
        else:
            below = st.floats(low - 1e6, low, allow_nan=False, exclude_max=not valid.low_open)
            choices.append(below)
    if valid.high is not None:
        high = valid.high
        if option.integer:
            bottom = int(high) if valid.high_open else int(high) + 1
            choices.append(st.integers(bottom, bottom + 1_000_000).map(float))
        else:
            choices.append(st.floats(high, high + 1e6, allow_nan=False, exclude_min=not valid.high_open))
    if not option.integer:
        choices.append(st.sampled_from([math.nan, math.inf, -math.inf]))
    assert choices, option
    return st.one_of(choices).map(lambda v: str(int(v)) if option.integer else repr(v))


@st.composite
def _bad_command(draw: st.DrawFn) -> tuple[list[str], Option]:
    option = draw(st.sampled_from([o for o in OPTIONS if o.valid.low is not None or o.valid.high is not None
                                   or not o.integer]))  # fmt: skip
    value = draw(_out_of_range(option))
    flag = option_name(option.path)
    args = [option.subcommand] if option.subcommand else []
    if option.tuple_:
        args += [flag, "16", value] if not value.startswith("-") else [f"{flag}={value}"]
    else:
        args.append(f"{flag}={value}")
    return args, option


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bad_command())
def test_cli_fuzz_out_of_range_values_exit_1_with_one_line(command: tuple[list[str], Option]) -> None:
    args, option = command
    code, out, err = _train(args)
    assert code == 1, (args, code, out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert err.startswith("vlmrl train: error: ") and f"({option_name(option.path)})" in err, (args, err)


def _train(args: list[str]) -> tuple[int, str, str]:
    """`vlmrl train ARGS` in this process (exit code, stdout, stderr); a run that gets past the checks fails."""
    out, err = io.StringIO(), io.StringIO()
    refuse = AssertionError("the config was accepted and a run started")
    with (
        mock.patch("vlmrl.online.trainer.Trainer.create", side_effect=refuse),
        mock.patch("vlmrl.online.trainer.Trainer.resume", side_effect=refuse),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = cli.main(["train", *args])
    return code, out.getvalue(), err.getvalue()

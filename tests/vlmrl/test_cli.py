import subprocess
import sys

from vlmrl import cli


def test_help_lists_every_verb(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for verb in ("train", "finetune", "deploy", "record", "score", "serve", "calibrate", "bench"):
        assert f"  {verb} " in out


def test_unknown_verb_is_a_usage_error(capsys):
    assert cli.main(["fly"]) == 2
    assert "unknown verb 'fly'" in capsys.readouterr().err


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "vlmrl", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "verbs:" in proc.stdout

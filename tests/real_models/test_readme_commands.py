"""Every command README.md shows is run here, so the README cannot drift from what works.

`onnx2ncnn ...` commands (code spans and indented lines) run in-process from a folder that
sees the repository's models/, with real-model files resolved by the names
`python scripts/fetch_models.py` prints and their output sent to a temporary folder; usage
synopses (with placeholders such as MODEL) must name only options the parser has; the
Python blocks run as written; the generated-harness commands run in a child process.
"""
from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from converter.cli import build_parser, main
from onnx_cases import MODELS, ROOT, random_inputs
from scripts.fetch_models import MODELS as REAL_MODELS
from scripts.fetch_models import fetch

README = (ROOT / "README.md").read_text()
PLACEHOLDER = re.compile(r"\b(MODEL|DIR|NAME|FILE|DIMS|VALUES|OUT)\b")


def readme_commands() -> list[str]:
    """`onnx2ncnn ...` code spans and indented lines, in README order ('&&' chains split)."""
    found = re.findall(r"`((?:\.venv/bin/)?onnx2ncnn [^`]+)`", README)
    found += [line.strip() for line in README.splitlines() if line.startswith("    ") and "onnx2ncnn " in line]
    commands = []
    for text in found:
        for part in text.split("&&"):
            part = part.strip()
            if re.match(r"(\.venv/bin/)?onnx2ncnn ", part) and part not in commands:
                commands.append(part)
    return commands


COMMANDS = readme_commands()
SYNOPSES = [c for c in COMMANDS if PLACEHOLDER.search(c)]
RUNNABLE = [c for c in COMMANDS if c not in SYNOPSES]
FIRST = [".venv/bin/onnx2ncnn convert models/bcast_demo.onnx -o out"]     # what later commands read


def test_the_readme_shows_the_commands_this_test_expects():
    assert len(RUNNABLE) > 40 and len(SYNOPSES) >= 3
    assert any("silero_vad_half.onnx" in c for c in RUNNABLE)


@pytest.mark.parametrize("synopsis", SYNOPSES)
def test_synopsis_names_real_options(synopsis):
    words = shlex.split(synopsis.replace("[", " ").replace("]", " ").replace("|", " "))
    command = words[1]
    parser = build_parser()._subparsers._group_actions[0].choices[command]
    known = {s for action in parser._actions for s in action.option_strings}
    named = {w.split("=")[0] for w in words if w.startswith("-") and w != "..."}
    assert named <= known, f"{synopsis}: {sorted(named - known)} are no options of {command}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder like the repository root (models/ and an out/ the first command fills), with the
    .npy files the run examples name."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "models").symlink_to(MODELS)
    model = onnx.load(str(MODELS / "bcast_demo.onnx"))
    for name, value in random_inputs(model).items():
        np.save(folder / f"{name}.npy", value)
    return folder


def real_model_paths() -> dict[str, Path]:
    return {fetch(m.name).name: fetch(m.name) for m in REAL_MODELS.values() if not m.executable}


def run_readme_command(command: str, cwd: Path, paths: dict[str, Path]) -> tuple[int, str]:
    argv = shlex.split(command)[1:]
    argv = [str(paths[a]) if a in paths else a for a in argv]
    if argv[0] == "convert" and "-o" not in argv:
        argv += ["-o", str(cwd / "beside")]        # not into the model cache or the repository
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def test_every_runnable_command_works(workdir):
    paths = real_model_paths()
    failures = []
    for command in FIRST + [c for c in RUNNABLE if c not in FIRST]:
        try:
            code, output = run_readme_command(command.removeprefix(".venv/bin/"), workdir, paths)
        except SystemExit as exc:
            code, output = exc.code, ""
        if code != 0:
            failures.append(f"{command}: exit {code}: {output.strip().splitlines()[-1:] }")
    assert not failures, "\n".join(failures)


def test_python_blocks_run_as_written(workdir):
    for block in re.findall(r"```python\n(.*?)```", README, re.S):
        with contextlib.chdir(workdir), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, "README.md", "exec"), {})


def test_generated_harness_commands_run(workdir):
    """Each `python out/<stem>_ncnn.py ...` line after converting its model as the README does; a line
    naming another Python by a placeholder path (/path/to/...) is tests/releases' to run."""
    lines = [line.strip() for line in README.splitlines() if line.startswith("    python out/")]
    runnable = [line for line in lines if "/path/to/" not in line]
    assert len(runnable) >= 3 and len(lines) - len(runnable) == 1
    for line in runnable:
        stem = line.split()[1].removeprefix("out/").removesuffix("_ncnn.py")
        model = next(MODELS.rglob(f"{stem}.onnx"))
        run_readme_command(f"onnx2ncnn convert models/{model.relative_to(MODELS)} -o out", workdir, {})
        args = shlex.split(line.split("#")[0])[1:]
        result = subprocess.run([sys.executable, "-I", *args], cwd=workdir, capture_output=True, text=True)
        assert result.returncode == 0, f"{line}: {result.stdout}{result.stderr}"

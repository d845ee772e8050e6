"""Every command README.md and docs/*.md show is run here, so the pages cannot drift from what works.

`onnx2ncnn ...` commands (code spans and indented lines) run in-process from a folder that
sees the repository's models/, with real-model files resolved by the names
`python scripts/fetch_models.py` prints and their output sent to a temporary folder; usage
synopses (with placeholders such as MODEL) must name only options the parser has; the
Python blocks run as written; the generated-harness commands run in a child process. Links
between the pages, and the repository paths they name in code spans, must exist.
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

# the README first (its set-up command makes the out/ later pages read), then docs/ by name
PAGES = {path.relative_to(ROOT).as_posix(): path.read_text()
         for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
PLACEHOLDER = re.compile(r"\b(MODEL|DIR|NAME|FILE|DIMS|VALUES|OUT)\b")


def indented(text: str, start: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.startswith("    " + start)]


def readme_commands() -> list[str]:
    """`onnx2ncnn ...` code spans and indented lines, page by page in PAGES order ('&&' chains split)."""
    found = []
    for text in PAGES.values():
        found += re.findall(r"`((?:\.venv/bin/)?onnx2ncnn [^`]+)`", text)
        found += [line for line in indented(text, "") if "onnx2ncnn " in line]
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


def test_the_pages_show_the_commands_this_test_expects():
    assert {"README.md", "docs/shapes.md", "docs/quantization.md", "docs/decoders.md", "docs/verify.md",
            "docs/releases.md", "docs/internals.md"} <= set(PAGES)
    assert len(RUNNABLE) > 40 and len(SYNOPSES) >= 3
    assert any("silero_vad_half.onnx" in c for c in RUNNABLE)
    assert any("qwen2_fp32.onnx" in c for c in RUNNABLE)          # docs/decoders.md's, not the README's


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_and_named_paths_exist():
    """A relative link reaches a page (and its heading, given '#'); a repository path in a code span
    (converter/..., passes/..., scripts/..., tests/..., models/...) is a file or folder: a move that
    leaves a page naming the old place fails here."""
    missing = []
    for name, text in PAGES.items():
        page = ROOT / name
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            file, _, fragment = target.partition("#")
            linked = (page.parent / file).resolve() if file else page
            if not linked.exists():
                missing.append(f"{name}: link {target}")
            elif fragment and linked.suffix == ".md" and fragment not in {
                    anchor(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}:
                missing.append(f"{name}: link {target}: no such heading")
        for span in re.findall(r"`([^`\s]+)`", text):
            path = span.split(":")[0]
            if re.match(r"(converter|passes|scripts|tests|models)/", path) and not re.search(r"[<*]", path) \
                    and not (ROOT / path).exists():
                missing.append(f"{name}: {span}")
    assert not missing, "\n".join(missing)


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
    # docs/ops.md's host-tail example: "scene.npy: float 0..1" (the detectors' drawn scene, pixels / 255)
    np.save(folder / "scene.npy", np.load(MODELS / "detectors" / "scene.npy").astype(np.float32) / 255)
    return folder


def real_model_paths() -> dict[str, Path]:
    return {fetch(m.name).name: fetch(m.name) for m in REAL_MODELS.values() if not m.executable}


def run_readme_command(command: str, cwd: Path, paths: dict[str, Path]) -> tuple[int, str]:
    argv = shlex.split(command)[1:]
    argv = [str(paths[a]) if a in paths else a for a in argv]
    named_files = "--param" in argv or any(a.startswith("ncnnparam=") for a in argv)
    if argv[0] == "convert" and "-o" not in argv and not named_files:
        argv += ["-o", str(cwd / "beside")]        # not into the model cache or the repository
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


# workdir -> {stem: the last command that converted <stem>.onnx into its out/}, so the harness test
# need not convert again what the command test left there (each conversion of a detector takes seconds)
INTO_OUT: dict[Path, dict[str, str]] = {}


def test_every_runnable_command_works(workdir):
    paths = real_model_paths()
    failures = []
    into_out = INTO_OUT.setdefault(workdir, {})
    for command in FIRST + [c for c in RUNNABLE if c not in FIRST]:
        try:
            code, output = run_readme_command(command.removeprefix(".venv/bin/"), workdir, paths)
        except SystemExit as exc:
            code, output = exc.code, ""
        if code != 0:
            failures.append(f"{command}: exit {code}: {output.strip().splitlines()[-1:] }")
        words = command.split()
        if code == 0 and words[1] == "convert" and "-o" in words and words[words.index("-o") + 1] == "out":
            into_out.update({Path(w).stem: command.removeprefix(".venv/bin/") for w in words if w.endswith(".onnx")})
    assert not failures, "\n".join(failures)


def test_python_blocks_run_as_written(workdir):
    (workdir / "out").mkdir(exist_ok=True)        # the set-up command's folder, were this test run alone
    for name, text in PAGES.items():
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            with contextlib.chdir(workdir), contextlib.redirect_stdout(io.StringIO()):
                exec(compile(block, name, "exec"), {})


def conversion_for(stem: str) -> str:
    """The pages' own command converting `<stem>.onnx` into out/ (with its options: --host-tail, ...),
    else a plain conversion of the bundled model of that name."""
    for command in COMMANDS:
        words = command.split()
        if command not in SYNOPSES and "-o" in words and words[words.index("-o") + 1] == "out" \
                and any(w.endswith(f"/{stem}.onnx") for w in words):
            return command.removeprefix(".venv/bin/")
    return f"onnx2ncnn convert models/{next(MODELS.rglob(f'{stem}.onnx')).relative_to(MODELS)} -o out"


def test_generated_harness_commands_run(workdir):
    """Each `python out/<stem>_ncnn.py ...` line after converting its model as the pages do; a line
    naming another Python by a placeholder path (/path/to/...) is tests/releases' to run."""
    lines = list(dict.fromkeys(line for text in PAGES.values() for line in indented(text, "python out/")))
    runnable = [line for line in lines if "/path/to/" not in line]
    assert len(runnable) >= 4 and len(lines) - len(runnable) == 1
    for line in runnable:
        stem = line.split()[1].removeprefix("out/").removesuffix("_ncnn.py")
        if INTO_OUT.get(workdir, {}).get(stem) != conversion_for(stem):
            code, output = run_readme_command(conversion_for(stem), workdir, {})
            assert code == 0, f"{conversion_for(stem)}: {output}"
        args = shlex.split(line.split("#")[0])[1:]
        result = subprocess.run([sys.executable, "-I", *args], cwd=workdir, capture_output=True, text=True)
        assert result.returncode == 0, f"{line}: {result.stdout}{result.stderr}"

"""The `<stem>_ncnn.py` convert writes beside the files: a user's first harness, done right.

It loads the .param/.bin with the ncnn Python package, feeds named inputs in ncnn's layout and
dtype (cloned Mats: ncnn's in-place layers write into the memory a Mat wraps), returns outputs
in the ONNX layout, and with --check compares them with onnxruntime on the .onnx. It needs
numpy and ncnn only (onnxruntime for --check), not onnx2ncnn.
"""
from __future__ import annotations

import os
from pathlib import Path

from converter.ncnn_side.layout import PERM_KEY
from converter.generation import wants_prompt_file
from converter.shapes.decoder_layout import prompt_param_path
from converter.verification.harness_generate import generate_block

TEMPLATE = '''#!/usr/bin/env python3
"""Run {param} / {bin} with the ncnn Python package (pip install ncnn numpy).

Written by onnx2ncnn from {onnx_name}. Arrays go in and come out as the ONNX model takes and
gives them (this file drops and restores the batch axis ncnn does not have).

    python {script} [--check] [--onnx MODEL.onnx] [--ncnn-python PATH] [NAME=FILE.npy ...]
    python {script} --generate N [--prompt 1,2,3] [--check]      (a decoder step)

Without inputs it feeds seeded random ones; --check also runs onnxruntime on the .onnx and
compares every output (|ncnn - ort| <= 1e-3 max|ort| + 1e-3 |ort|; exit 1 if any differs).
--ncnn-python PATH runs the files in the ncnn that Python imports (the release you ship; it needs
numpy and ncnn only). The files need ncnn {min_version_text} or newer.
From Python:

    {import_line}
    outputs = Model().run({{{first_input!r}: array}})
"""
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PARAM, BIN = HERE / {param_path!r}, HERE / {bin_path!r}
# the .onnx beside these files as they were written, or where it was then (the folder moved)
ONNX = next((p for p in (HERE / {onnx_rel!r}, Path({onnx_abs!r})) if p.is_file()), HERE / {onnx_rel!r})
# per input and output: ONNX name, ncnn blob, ONNX shape (None: dynamic), the ONNX axis ncnn drops,
# the dtype ncnn reads (int32 only for an Embed's word ids) and the ONNX dtype; an input ncnn takes
# channels-first (convert --nchw-input) also has {perm_key}: ncnn's axes, in ONNX's numbering
INPUTS = {inputs!r}
OUTPUTS = {outputs!r}
FIXED = {fixed!r}        # inputs convert fixed with --input-value: onnxruntime still needs them
EXAMPLE_SHAPES = {examples!r}   # sizes for random inputs where the model leaves dims dynamic
NCNN_MIN_VERSION = {min_version!r}     # the oldest ncnn release (1.0.<date>) these files load in


def check_ncnn_version(ncnn):
    """One line (RuntimeError) when the installed ncnn is older than the files need."""
    version = str(getattr(ncnn, "__version__", "")).split("+")[0]
    release = version.rsplit(".", 1)[-1]
    if NCNN_MIN_VERSION and release.isdigit() and len(release) == 8 and int(release) < NCNN_MIN_VERSION:
        raise RuntimeError(f"these files need ncnn {{NCNN_MIN_VERSION}} or newer, the installed ncnn is {{version}}: "
                           f"pip install 'ncnn>=1.0.{{NCNN_MIN_VERSION}}', or convert with --target-ncnn {{release}}")

{tail_block}

class Model:
    def __init__(self, threads=2, param=None, io=None):
        try:
            import ncnn
        except ImportError:
            sys.exit("this script runs the files with the ncnn Python package: pip install ncnn")
        check_ncnn_version(ncnn)
        self.ncnn = ncnn
        self.net = ncnn.Net()
        # exact float32: ncnn's defaults use fp16/bf16 where the CPU has them (faster, ~1e-3 off)
        for option in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
            if hasattr(self.net.opt, option):
                setattr(self.net.opt, option, False)
        self.net.opt.num_threads = threads
        # `param`, `io`: another .param on the same .bin with its own inputs and outputs (a decoder's prompt file)
        self.param, (self.inputs, self.outputs) = param or PARAM, io or (INPUTS, OUTPUTS)
        if self.net.load_param(str(self.param)) != 0 or self.net.load_model(str(BIN)) != 0:
            raise RuntimeError(f"ncnn could not load {{self.param}} / {{BIN}}")

    def run(self, feeds):
        """{{ONNX input name: array in ONNX layout}} -> {{ONNX output name: array in ONNX layout}}."""
        if self.inputs is INPUTS:
            check_feeds(feeds)
        extractor = self.net.create_extractor()
        for entry in self.inputs:
            array, axis, perm = np.asarray(feeds[entry["onnx"]]), entry["batch_axis"], entry.get("{perm_key}")
            if perm:        # an NHWC input ncnn takes channels-first (convert --nchw-input)
                array, axis = np.transpose(array, perm), None if axis is None else perm.index(axis)
            if axis is not None:
                array = np.squeeze(array, axis)
            shape = _known(entry["ncnn_shape"])
            array = np.ascontiguousarray(array if shape is None else array.reshape(shape), entry["dtype"])
            # clone: a Mat wraps the numpy memory, and layers working in place would write into it
            extractor.input(entry["ncnn"], self.ncnn.Mat(array).clone())
        outputs = {{}}
        for entry in self.outputs:
            code, mat = extractor.extract(entry["ncnn"])
            if code != 0:
                raise RuntimeError(f"ncnn failed to compute {{entry['ncnn']}} (code {{code}})")
            array = np.array(mat).copy()
            if entry["dtype"] == "int32":      # int32 bits (an input passed through): a Mat reads as float32
                array = array.view(np.int32)
            shape = _known(entry["onnx_shape"])
            if shape is None and entry["batch_axis"] is not None and array.ndim == len(entry["onnx_shape"]) - 1:
                array = np.expand_dims(array, entry["batch_axis"])
            outputs[entry["onnx"]] = array if shape is None else array.reshape(shape)
        return run_tail(feeds, outputs) if TAIL else outputs


def check_feeds(feeds):
    """One line (ValueError) for a missing input or one whose shape the files cannot take: a wrong
    width would otherwise fail in numpy's reshape or crash ncnn."""
    for entry in INPUTS:
        name, want = entry["onnx"], entry["onnx_shape"]
        if name not in feeds:
            raise ValueError(f"input {{name!r}} is missing; the inputs are {{', '.join(e['onnx'] for e in INPUTS)}}")
        shape = list(np.shape(feeds[name]))
        if want is not None and (len(shape) != len(want) or any(w is not None and w != d for w, d in zip(want, shape))):
            raise ValueError(f"input {{name!r}} has shape {{shape}}; these files take "
                             f"{{[d if d is not None else '?' for d in want]}} ('?': any size)")


def _known(shape):
    """`shape` for reshape, its one dynamic dim solved from the element count (-1); None when
    more than one dim is dynamic (then only the batch axis is dropped or restored)."""
    if shape is None or sum(d is None for d in shape) > 1:
        return None
    return [-1 if d is None else d for d in shape]


def random_inputs(seed=0):
    rng = np.random.default_rng(seed)
    feeds = {{}}
    for entry in INPUTS:
        shape = EXAMPLE_SHAPES[entry["onnx"]]
        if np.dtype(entry["onnx_dtype"]).kind == "f":
            feeds[entry["onnx"]] = rng.uniform(-1, 1, shape).astype(entry["onnx_dtype"])
        else:
            # below the smallest table the input indexes; 0 or 1 (a mask) where it indexes none
            feeds[entry["onnx"]] = rng.integers(0, entry["random_high"], shape).astype(entry["onnx_dtype"])
    return feeds


def check(feeds, outputs, onnx_path):
    import onnxruntime
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    fixed = {{name: np.asarray(value, dtype) for name, (value, dtype) in FIXED.items()}}
    onnx_feeds = {{e["onnx"]: np.asarray(feeds[e["onnx"]], e["onnx_dtype"]) for e in INPUTS}}
    for i in session.get_inputs():      # read only by a branch these files are not (a merged decoder's past)
        if i.name not in onnx_feeds and i.name not in fixed and i.type == "tensor(float)":
            fixed[i.name] = np.zeros([d if isinstance(d, int) else 0 for d in i.shape], np.float32)
    names = list(outputs)        # the whole model's outputs (with a host tail, more than ncnn's)
    reference = dict(zip(names, session.run(names, {{**onnx_feeds, **fixed}})))
    passed = True
    for name in names:
        got, want = outputs[name].astype(np.float64), reference[name].astype(np.float64)
        if got.shape != want.shape:
            print(f"MISMATCH {{name}}: shape {{list(got.shape)}}, onnxruntime {{list(want.shape)}}")
            passed = False
            continue
        same = (got == want) | (np.isnan(got) & np.isnan(want))      # equal NaN counts as equal, as in verify
        error = np.where(same, 0.0, np.abs(got - want))
        bound = 1e-3 * np.max(np.abs(want), initial=0.0) + 1e-3 * np.abs(want)
        ok = bool(np.all(error <= bound))
        moved = None if ok or not TAIL else rows_in_other_order(got, want, 1e-3 * np.max(np.abs(want)), 1e-3)
        if moved:
            print(f"  {{name}}: {{moved}} rows in another order (the tail's TopK orders near-equal scores by "
                  f"ncnn's last bits); each matches one of onnxruntime's within the tolerance")
            ok = True
        passed &= ok
        print(f"{{'ok' if ok else 'MISMATCH'}} {{name}} {{list(got.shape)}}: max abs error "
              f"{{float(np.max(error, initial=0.0)):.3g}}")
    return passed


def _option(argv, flag):
    """argv without `flag VALUE`, and VALUE (None when absent)."""
    if flag not in argv:
        return argv, None
    at = argv.index(flag)
    if at + 1 >= len(argv):
        sys.exit(f"{{flag}} needs a value")
    return argv[:at] + argv[at + 2:], argv[at + 1]


def run_script_in(python, *args):
    """This script in the Python `python` with `args`; one line and exit where it cannot run or fails."""
    import subprocess
    try:
        done = subprocess.run([python, str(Path(__file__).resolve()), *args])
    except OSError as exc:
        sys.exit(f"--ncnn-python {{python}}: cannot run it ({{exc.strerror or exc}})")
    if done.returncode != 0:        # the child said why in one line, or crashed
        sys.exit(done.returncode if done.returncode > 0 else f"the ncnn of {{python}} crashed "
                 f"(signal {{-done.returncode}})")


def run_in_python(python, feeds):
    """Run the files in the ncnn `python` imports: this script in a child, arrays through .npz files."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        feeds_path, outputs_path = Path(folder) / "feeds.npz", Path(folder) / "outputs.npz"
        np.savez(feeds_path, *[np.asarray(feeds[e["onnx"]]) for e in INPUTS])
        run_script_in(python, "--feeds", str(feeds_path), "--save", str(outputs_path))
        with np.load(outputs_path) as saved:
            return {{e["onnx"]: saved[f"arr_{{i}}"] for i, e in enumerate(OUTPUTS)}}


def loaded(threads=2):
    """Model(threads), or one line and exit 1 for an ncnn older than the files need or files it cannot load."""
    try:
        return Model(threads)
    except RuntimeError as exc:
        sys.exit(str(exc))


def run_here(feeds):
    """The outputs in this Python's ncnn, or one line and exit 1 (also for a feed the files cannot take)."""
    try:
        return loaded().run(feeds)
    except (RuntimeError, ValueError) as exc:
        sys.exit(str(exc))


def check_options(argv):
    """argv without --check and --onnx PATH; whether --check was given; the .onnx it compares with."""
    argv, onnx_path = _option(argv, "--onnx")
    return [a for a in argv if a != "--check"], "--check" in argv, ONNX if onnx_path is None else Path(onnx_path)


def _child(argv):
    """--feeds IN.npz --save OUT.npz: what run_in_python asks of this script in another Python."""
    argv, feeds_path = _option(argv, "--feeds")
    argv, save_path = _option(argv, "--save")
    with np.load(feeds_path) as saved:
        feeds = {{e["onnx"]: saved[f"arr_{{i}}"] for i, e in enumerate(INPUTS)}}
    outputs = run_here(feeds)
    np.savez(save_path, *[outputs[e["onnx"]] for e in OUTPUTS])


def main(argv):
    if "--feeds" in argv:
        return _child(argv)
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return
    argv, ncnn_python = _option(argv, "--ncnn-python")
    argv, check_wanted, onnx_path = check_options(argv)
    feeds = random_inputs()
    for item in argv:
        name, _, path = item.partition("=")
        if name not in feeds:
            sys.exit(f"unknown input {{name!r}}; the inputs are {{', '.join(feeds)}}")
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            sys.exit(f"cannot read {{path}} for input {{name!r}}: {{exc}}")
    if ncnn_python is not None:
        outputs = run_in_python(ncnn_python, feeds)
    else:
        outputs = run_here(feeds)
    for name, value in outputs.items():
        print(f"{{name}}: shape {{list(value.shape)}}, mean {{float(value.mean()):.6g}}")
    if check_wanted:
        sys.exit(0 if check(feeds, outputs, onnx_path) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
'''


def script_path(param_path: str | os.PathLike) -> Path:
    """`out/320n.ncnn.param` -> `out/320n_ncnn.py`: <stem>_ncnn.py as convert names it, the stem as
    the model's (a stem Python cannot import by name gets runpy in the script's docstring)."""
    param_path = Path(param_path)
    return param_path.parent / f"{param_path.name.removesuffix('.param').removesuffix('.ncnn')}_ncnn.py"


def import_line(script: Path) -> str:
    """How the docstring tells a user to reach Model from Python."""
    if script.stem.isidentifier():
        return f"from {script.stem} import Model"
    return f'import runpy; Model = runpy.run_path({str(script.name)!r})["Model"]'


def harness_script(model, param_path, bin_path, onnx_path, example_shapes: dict[str, list[int]],
                   fixed: dict[str, tuple[list, str]], tail_block: str = "TAIL = None\n") -> str:
    """The script's text for files written at `param_path`/`bin_path` from `onnx_path`."""
    io = model.io()
    onnx_dtypes = {name: str(model.graph.tensors[name].dtype) for name in model.graph.inputs}
    keys = ("onnx", "ncnn", "onnx_shape", "ncnn_shape", "batch_axis", "dtype")
    highs = model.stats.get("random_high", {})
    inputs = [{**{k: e[k] for k in keys}, "onnx_dtype": onnx_dtypes.get(e["onnx"], "float32"),
               "random_high": highs.get(e["onnx"], 4), **{k: e[k] for k in (PERM_KEY,) if k in e}}
              for e in io["inputs"]]
    outputs = [{k: e[k] for k in keys} for e in io["outputs"]]
    folder = Path(param_path).resolve().parent
    script = script_path(param_path)
    def plain(text: str) -> str:         # safe inside the script's docstring
        return text.replace("\\", "/").replace('"', "'")
    text = TEMPLATE.format(
        param=plain(Path(param_path).name), bin=plain(Path(bin_path).name), onnx_name=plain(Path(onnx_path).name),
        param_path=Path(param_path).name, bin_path=os.path.relpath(Path(bin_path).resolve(), folder),
        onnx_rel=os.path.relpath(Path(onnx_path).resolve(), folder), script=script.name,
        onnx_abs=str(Path(onnx_path).resolve()),
        import_line=plain(import_line(script)), first_input=plain(inputs[0]["onnx"] if inputs else "input"),
        inputs=inputs, outputs=outputs, perm_key=PERM_KEY, fixed=fixed, tail_block=tail_block,
        examples={e["onnx"]: example_shapes.get(e["onnx"], e["onnx_shape"]) for e in inputs},
        min_version=io.get("ncnn_min_version"), min_version_text=io.get("ncnn_min_version") or "(unknown)")
    int8_gemm = any(n.op == "Gemm" and 0 < int(n.params.get(18, 0)) < 400 for n in model.graph.topological())
    prompt = prompt_param_path(param_path).name if wants_prompt_file(io) else None
    return with_generation(text, io, script.name, int8_gemm, prompt)


def with_generation(text: str, io: dict, script_name: str, int8_gemm: bool = False, prompt: str | None = None) -> str:
    """A decoder step's script also generates tokens (converter/verification/harness_generate.py);
    `prompt`: the prompt file its generation starts from (generation.wants_prompt_file), a name beside the .param."""
    block = generate_block(io, script_name, int8_gemm, prompt)
    tail = '\n\nif __name__ == "__main__":'
    return text if block is None else text.replace(tail, block + tail)

"""Seeded mutation fuzz of the command line: no input may ever get a traceback.

    python scripts/fuzz.py [--seed N] [--count N] [--time-limit S] [--workers N]

Mutates the bundled models and a few small built-in ones that reach the run-time paths
(an If on a run-time value, Range / ConstantOfShape / Expand over run-time sizes, Clip
with computed bounds, CumSum): flipped, inserted and deleted bytes; edits to attributes
(odd ints, NaN / inf floats), input shapes and element types, op types, node inputs
(replaced, added, dropped), initializers (dims, dtype, values), node order and opset;
`--input-shape` overriding an input's dims. Their converted .param/.bin files get edited
tokens (odd ints, int32 limits, NaN / inf), dropped lines and truncated weights. Each
case runs `convert`, `verify` or `run`,
and prints how each case ended: exit 0 / 1, a clean exit 2 (one line on stderr), a
traceback, a multi-line error, the last-guard "internal error", a signal, a timeout,
files left in the output folder after a failure, files written outside it.

Each case runs `converter.cli.main` in a forked child (the modules are imported once),
in its own empty working folder, with its own output folder and a time limit.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter.cli import main as cli_main  # noqa: E402

MODELS = ["bcast_demo", "cnn_dynamic", "cnn_small", "transformer_small"]
OPS = ["Conv", "Relu", "Add", "MatMul", "Reshape", "Transpose", "MaxPool", "Concat", "Softmax", "Gemm", "Resize",
       "Gather", "Slice", "Pad", "BatchNormalization", "ConvTranspose", "Split", "Squeeze", "Where", "Loop"]
ODD_INTS = [0, -1, 1, 2, 3, 7, 10**12, -10**12, 2**31, -(2**31)]
ODD_FLOATS = [0.0, -1.0, 0.5, 1e-30, 1e30, -1e30, float("nan"), float("inf"), float("-inf")]
ODD_PARAMS = ["2147483647", "-2147483648", "nan", "inf", "-inf", "1e30", "1.5", "-0.0"]
ELEM_TYPES = [onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.INT64, onnx.TensorProto.INT32,
              onnx.TensorProto.BOOL, onnx.TensorProto.UINT8, onnx.TensorProto.STRING, 0]
OPSETS = [1, 6, 9, 11, 12, 13, 17, 18, 21, 99]
OUTCOMES = ["exit 0", "exit 1", "clean exit 2", "traceback", "multi-line error", "internal error",
            "signal", "timeout", "files left in -o", "files outside -o"]


@dataclass
class Case:
    kind: str                    # "model" or "param"
    command: str                 # convert / verify / run
    data: bytes
    extra: bytes = b""           # the .bin of a "param" case
    args: list[str] = field(default_factory=list)     # more command-line options


# ---- mutations -------------------------------------------------------------------

def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not b:
            break
        i = rng.randrange(len(b))
        choice = rng.random()
        if choice < 0.5:
            b[i] = rng.randrange(256)
        elif choice < 0.75:
            b.insert(i, rng.randrange(256))
        else:
            del b[i:i + rng.randint(1, 16)]
    return bytes(b)


def mutate_model(rng: random.Random, model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto.FromString(model.SerializeToString())
    g = m.graph
    what = rng.choice(["attribute", "attribute", "shape", "elem_type", "op", "input", "input", "initializer",
                       "initializer", "order", "opset", "branch"] + ["initializer", "branch"] * (len(g.node) < 12))
    if what == "branch":         # the If models: mutate inside a then/else graph instead
        branches = [a.g for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
        g = rng.choice(branches) if branches else g
        what = rng.choice(["attribute", "op", "input", "initializer", "shape"])
    if what == "attribute" and g.node:
        _mutate_attribute(rng, rng.choice(g.node))
    elif what == "shape" and (g.input or g.output):
        dims = rng.choice(list(g.input) + list(g.output)).type.tensor_type.shape.dim
        if dims:
            d = rng.choice(dims)
            if rng.random() < 0.2:
                dims.remove(d)
            elif rng.random() < 0.2:
                d.dim_param = rng.choice(["N", "H", "W"])
            else:
                d.dim_value = rng.choice([0, 1, 2, 5, 10**12])
    elif what == "elem_type" and g.input:
        vi = rng.choice(list(g.input) + list(g.output) + list(g.value_info))
        vi.type.tensor_type.elem_type = rng.choice(ELEM_TYPES)
    elif what == "op" and g.node:
        rng.choice(g.node).op_type = rng.choice(OPS)
    elif what == "input" and g.node:
        _mutate_node_inputs(rng, g, rng.choice(g.node))
    elif what == "initializer" and g.initializer:
        _mutate_initializer(rng, rng.choice(g.initializer))
    elif what == "order" and len(g.node) > 1:
        nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in g.node]
        if rng.random() < 0.5:
            i, j = rng.randrange(len(nodes)), rng.randrange(len(nodes))
            nodes[i], nodes[j] = nodes[j], nodes[i]
        else:
            rng.shuffle(nodes)
        del g.node[:]
        g.node.extend(nodes)
    elif what == "opset":
        for o in m.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = rng.choice(OPSETS)
    return m


def _mutate_attribute(rng: random.Random, node: onnx.NodeProto) -> None:
    numbers = [a for a in node.attribute if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS,
                                                        onnx.AttributeProto.FLOAT, onnx.AttributeProto.FLOATS)]
    if not numbers:
        if node.attribute and rng.random() < 0.5:
            node.attribute.remove(rng.choice(node.attribute))
        elif rng.random() < 0.3:       # an attribute the op may not take, or takes with another type
            name = rng.choice(["axis", "axes", "to", "value", "min", "max", "exclusive", "reverse", "perm"])
            node.attribute.append(onnx.helper.make_attribute(name, rng.choice([rng.choice(ODD_INTS),
                                                                               rng.choice(ODD_FLOATS), [0, 1]])))
        return
    a = rng.choice(numbers)
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(ODD_INTS)
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice(ODD_FLOATS)
    elif a.type == onnx.AttributeProto.FLOATS and a.floats:
        a.floats[rng.randrange(len(a.floats))] = rng.choice(ODD_FLOATS)
    elif a.ints:
        a.ints[rng.randrange(len(a.ints))] = rng.choice(ODD_INTS)
        if rng.random() < 0.3:
            a.ints.append(rng.choice(ODD_INTS))
        elif rng.random() < 0.2:
            a.ints.pop()


def _mutate_node_inputs(rng: random.Random, g: onnx.GraphProto, node: onnx.NodeProto) -> None:
    names = [t for n in g.node for t in n.output] + [i.name for i in g.initializer] + ["", "missing"]
    names += [i.name for i in g.input]
    roll = rng.random()
    if node.input and roll < 0.5:
        node.input[rng.randrange(len(node.input))] = rng.choice(names)
    elif roll < 0.75:
        node.input.append(rng.choice(names))
    elif node.input:
        node.input.pop()


def _mutate_initializer(rng: random.Random, t: onnx.TensorProto) -> None:
    from onnx import numpy_helper
    roll = rng.random()
    try:
        value = numpy_helper.to_array(t)
    except ValueError:          # an earlier mutation changed its dims: leave it so
        return
    if roll < 0.4 or t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.INT64):
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 3, 10**6])
        return
    if roll < 0.7 and value.size:        # one odd element: NaN, inf, an int64 past int32
        flat = value.reshape(-1).copy()
        pool = ODD_FLOATS if flat.dtype.kind == "f" else ODD_INTS + [2**62, -2**62]
        flat[rng.randrange(flat.size)] = rng.choice(pool)
        value = flat.reshape(value.shape)
    elif roll < 0.85:
        with np.errstate(all="ignore"):
            value = value.astype(rng.choice([np.int32, np.float16, np.float64, np.int64, np.uint8, np.bool_]))
    else:
        value = value.reshape(-1) if rng.random() < 0.5 else value.reshape((1, *value.shape))
    t.CopyFrom(numpy_helper.from_array(value, t.name))


def mutate_param(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        if len(lines) < 3:
            break
        i = rng.randrange(len(lines))
        tokens = lines[i].split()
        choice = rng.random()
        if choice < 0.15:
            del lines[i]
        elif tokens and choice < 0.7:
            k = rng.randrange(len(tokens))
            head = tokens[k].split("=")[0] + "=" if "=" in tokens[k] else ""
            tokens[k] = head + str(rng.choice(ODD_INTS + [-233, 4, 99] + ODD_PARAMS))
            lines[i] = " ".join(tokens)
        elif tokens:
            other = rng.choice(lines).split()
            if other:
                tokens[rng.randrange(len(tokens))] = rng.choice(other)
            lines[i] = " ".join(tokens)
    return "\n".join(lines) + "\n"


# ---- built-in models: the run-time paths the bundled models do not reach ----------------

def _graph_model(name, nodes, inputs, outputs, inits) -> onnx.ModelProto:
    from onnx import helper, numpy_helper
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, d) for n, d in inputs],
                              [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, d) for n, d in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def if_select_model() -> onnx.ModelProto:
    """y = If(mean(input) > 0) then input * 2 else input - 1: a condition known only at run time."""
    from onnx import helper
    shape = [1, 3, 8, 8]

    def branch(name, op, operand):
        out = f"{name}_y"
        return helper.make_graph([helper.make_node(op, ["input", operand], [out])], name, [],
                                 [helper.make_tensor_value_info(out, onnx.TensorProto.FLOAT, shape)])
    nodes = [helper.make_node("ReduceMean", ["input"], ["mean"], keepdims=0),
             helper.make_node("Greater", ["mean", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["picked"], then_branch=branch("then", "Mul", "two"),
                              else_branch=branch("else", "Sub", "one")),
             helper.make_node("Relu", ["picked"], ["y"])]
    return _graph_model("if_select", nodes, [("input", shape)], [("y", shape)],
                        [("zero", np.float32(0)), ("one", np.float32(1)), ("two", np.float32(2))])


def fill_grid_model() -> onnx.ModelProto:
    """Range / ConstantOfShape / Expand over the input's run-time H and W, then a CumSum."""
    from onnx import helper
    nodes = [helper.make_node("Shape", ["input"], ["s"]),
             helper.make_node("Gather", ["s", "i3"], ["w_i"], axis=0),
             helper.make_node("Cast", ["w_i"], ["w"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Range", ["zero", "w", "one"], ["cols"]),
             helper.make_node("Slice", ["s", "i2v", "i4v"], ["hw"]),
             helper.make_node("ConstantOfShape", ["hw"], ["half"],
                              value=helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [0.5])),
             helper.make_node("Expand", ["cols", "hw"], ["grid"]),
             helper.make_node("Add", ["grid", "half"], ["centres"]),
             helper.make_node("Add", ["input", "centres"], ["shifted"]),
             helper.make_node("CumSum", ["shifted", "i3"], ["y"])]
    return _graph_model("fill_grid", nodes, [("input", [1, 3, "H", "W"])], [("y", [1, 3, "H", "W"])],
                        [("zero", np.float32(0)), ("one", np.float32(1)), ("i3", np.int64(3)),
                         ("i2v", np.array([2], np.int64)), ("i4v", np.array([4], np.int64))])


def clip_bounds_model() -> onnx.ModelProto:
    """Clip with bounds computed at run time, then one with constant bounds, then a CumSum."""
    from onnx import helper
    shape = [1, 3, 8, 8]
    nodes = [helper.make_node("ReduceMax", ["input"], ["top"], keepdims=0),
             helper.make_node("Sub", ["top", "range"], ["floor"]),
             helper.make_node("Clip", ["input", "floor", ""], ["floored"]),
             helper.make_node("Clip", ["floored", "lo", "hi"], ["clipped"]),
             helper.make_node("CumSum", ["clipped", "axis"], ["y"], reverse=1)]
    return _graph_model("clip_bounds", nodes, [("input", shape)], [("y", shape)],
                        [("range", np.float32(1.5)), ("lo", np.float32(-0.5)), ("hi", np.float32(6)),
                         ("axis", np.int64(1))])


BUILT_IN = {"if_select": if_select_model, "fill_grid": fill_grid_model, "clip_bounds": clip_bounds_model}


def seed_models() -> dict[str, onnx.ModelProto]:
    models = {name: onnx.load(str(ROOT / "models" / f"{name}.onnx")) for name in MODELS}
    return {**models, **{name: make() for name, make in BUILT_IN.items()}}


def shape_override(rng: random.Random, model: onnx.ModelProto) -> list[str]:
    """--input-shape for one input: its own dims with one changed (a fixed dim overridden), another
    rank, zero, huge or '?' dims, or a name the model does not have."""
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if not inputs:
        return []
    vi = rng.choice(inputs)
    dims = [d.dim_value if d.HasField("dim_value") else 8 for d in vi.type.tensor_type.shape.dim] or [1]
    roll = rng.random()
    if roll < 0.5:
        dims[rng.randrange(len(dims))] = rng.choice([1, 2, 5, 16, 64])
    elif roll < 0.6:
        dims = dims[1:] or [1, 1]
    elif roll < 0.7:
        dims = dims + [2]
    else:
        dims[rng.randrange(len(dims))] = rng.choice([0, -1, "?", 10**9])
    name = vi.name if rng.random() < 0.9 else "no_such_input"
    return ["--input-shape", f"{name}={','.join(map(str, dims))}"]


def corpus(seed: int, count: int, converted: dict) -> list[Case]:
    rng = random.Random(seed)
    models = seed_models()
    names = sorted(models)
    cases = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.2:
            name = rng.choice(names)
            data = mutate_bytes(rng, models[name].SerializeToString())
            cases.append(Case("model", rng.choice(["convert", "convert", "verify"]), data))
        elif kind < 0.7:
            name = rng.choice(names)
            m = models[name]
            for _ in range(rng.randint(0 if name in BUILT_IN else 1, 2)):
                m = mutate_model(rng, m)
            extra = shape_override(rng, m) if rng.random() < 0.2 else []
            cases.append(Case("model", rng.choice(["convert", "convert", "verify"]), m.SerializeToString(),
                              args=extra))
        else:
            name = rng.choice(list(converted))
            param, bin_ = converted[name]
            if rng.random() < 0.8:
                param = mutate_param(rng, param.decode()).encode()
            else:
                bin_ = bin_[:rng.randrange(len(bin_) + 1)] if bin_ else bin_
            cases.append(Case("param", "run", param, bin_))
    return cases


def convert_bundled() -> dict:
    """Each seed model's .param/.bin, to mutate."""
    from converter import convert
    out = {}
    for name, onnx_model in seed_models().items():
        model = convert(onnx_model)
        with tempfile.TemporaryDirectory() as folder:
            param, bin_ = Path(folder) / "m.param", Path(folder) / "m.bin"
            model.save(param, bin_)
            out[name] = (param.read_bytes(), bin_.read_bytes())
    return out


# ---- running a case ------------------------------------------------------------------

def _child(case: Case, work: Path, out_dir: Path) -> None:
    os.chdir(work)
    err = os.open(work / ".stderr", os.O_WRONLY | os.O_CREAT)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(err, 2)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    try:
        if case.kind == "model":
            (work / "m.onnx").write_bytes(case.data)
            argv = [case.command, "m.onnx"] + (["-o", str(out_dir)] if case.command == "convert" else [])
            argv += case.args
        else:
            (work / "m.param").write_bytes(case.data)
            (work / "m.bin").write_bytes(case.extra)
            np.save(work / "x.npy", np.zeros((3, 8, 8), np.float32))
            argv = ["run", "m.param", "m.bin", "--input", "input=x.npy", "--input", "data=x.npy",
                    "-o", str(out_dir / "out.npz")]
        code = cli_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)


def run_case(case: Case, time_limit: float, show: bool = False) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        work, out_dir = Path(folder) / "work", Path(folder) / "out"
        work.mkdir()
        out_dir.mkdir()
        pid = os.fork()
        if pid == 0:
            _child(case, work, out_dir)
        deadline = time.monotonic() + time_limit
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return ["timeout"]
            time.sleep(0.01)
        stderr = (work / ".stderr").read_text(errors="replace") if (work / ".stderr").exists() else ""
        if show:
            print(f"{case.kind} {case.command}:\n{stderr}")
        outcomes = _classify(status, stderr)
        made = [p for p in out_dir.rglob("*")]
        if made and not outcomes[0].startswith("exit 0"):
            outcomes.append("files left in -o")
        inputs = {".stderr", "m.onnx", "m.param", "m.bin", "x.npy"}
        if [p for p in work.iterdir() if p.name not in inputs]:
            outcomes.append("files outside -o")
        return outcomes


def _classify(status: int, stderr: str) -> list[str]:
    if os.WIFSIGNALED(status):
        return ["signal"]
    code = os.WEXITSTATUS(status)
    # warnings, and verify's stage lines for runs over 2 s (the machine's load decides which those are)
    lines = [line for line in stderr.splitlines()
             if line.strip() and not line.startswith(("onnx2ncnn: warning:", "verify: "))]
    if "Traceback (most recent call last)" in stderr:
        return ["traceback"]
    if "internal error" in stderr:
        return ["internal error"]
    if code == 2:
        return ["clean exit 2" if len(lines) == 1 else "multi-line error"]
    if code in (0, 1):
        return [f"exit {code}"] if not lines or code == 1 else [f"exit {code}", "multi-line error"]
    return [f"exit {code}"]


def fuzz(seed: int, count: int, time_limit: float, workers: int, deadline: float | None = None,
         examples: dict | None = None) -> collections.Counter:
    cases = corpus(seed, count, convert_bundled())
    counts: collections.Counter = collections.Counter()
    running: dict[int, int] = {}
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers) as pool:
        results = pool.imap(_run_indexed, [(i, c, time_limit) for i, c in enumerate(cases)])
        for i, outcomes in results:
            for o in outcomes:
                counts[o] += 1
                if examples is not None and o not in ("exit 0", "clean exit 2"):    # exit 1: verify mismatched
                    examples.setdefault(o, []).append(i)
            if deadline is not None and time.monotonic() > deadline:
                pool.terminate()
                break
    del running
    return counts


def _run_indexed(item):
    i, case, time_limit = item
    return i, run_case(case, time_limit)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--time-limit", type=float, default=60.0, help="per case, seconds")
    parser.add_argument("--total-time", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--show", type=int, nargs="*", help="run these case numbers and print their stderr")
    args = parser.parse_args()
    if args.show:
        cases = corpus(args.seed, args.count, convert_bundled())
        for i in args.show:
            print(f"case {i}: {run_case(cases[i], args.time_limit, show=True)}")
        return
    start = time.monotonic()
    examples: dict = {}
    counts = fuzz(args.seed, args.count, args.time_limit, args.workers,
                  None if args.total_time is None else start + args.total_time, examples)
    print(f"{sum(counts[o] for o in OUTCOMES[:8])} cases, seed {args.seed}, {time.monotonic() - start:.0f} s")
    for outcome in OUTCOMES:
        print(f"  {outcome:<18} {counts[outcome]:>6}")
    for outcome, ids in examples.items():
        print(f"  {outcome}: cases {ids[:10]}")


if __name__ == "__main__":
    main()

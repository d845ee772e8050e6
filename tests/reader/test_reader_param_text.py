"""Hand-written .param text: arrays, e-notation, strings, spacing, kind conversion, unknown ids."""
import numpy as np

from converter.ncnn_side.reader import parse_param, read_ncnn

F32 = lambda v: float(np.float32(v))  # noqa: E731

TEXT = """7767517
7   9

Input            in0      0 1 x   0=4  1=3   2=2
Split            sp       1 2 x x1 x2
Eltwise          el       2 1 x1 x2 sum   0=1 -23301=2,2.0,3.5E-1
Clip             clip     1 1 sum clipped 0=-1 1=2.5e+00 31=1
Slice            sl       1 2 clipped a b -23300=2,1,-233 1=1
Reshape          rs       1 1 a r 0=3 6="0w, 0h,1"
Interp           up       1 1 b u 0=2 1=2 2=2. 9=fancy_expr,with,commas
"""


def test_layers_blobs_and_order():
    records = parse_param(TEXT)
    assert [(r.type, r.name, r.line) for r in records] == [
        ("Input", "in0", 4), ("Split", "sp", 5), ("Eltwise", "el", 6), ("Clip", "clip", 7),
        ("Slice", "sl", 8), ("Reshape", "rs", 9), ("Interp", "up", 10)]
    assert records[1].inputs == ["x"] and records[1].outputs == ["x1", "x2"]
    assert records[2].inputs == ["x1", "x2"] and records[2].outputs == ["sum"]


def test_params_take_the_kinds_of_the_spec():
    p = {r.name: r.params for r in parse_param(TEXT)}
    assert p["in0"] == {0: 4, 1: 3, 2: 2}
    # a counted float array, e-notation included
    assert p["el"] == {0: 1, 1: (2.0, F32(0.35))}
    # an int for a float param becomes a float; an id the spec does not know is kept as written
    assert p["clip"] == {0: -1.0, 1: 2.5, 31: 1}
    assert type(p["clip"][0]) is float
    assert p["sl"] == {0: (1, -233), 1: 1}
    # a quoted string keeps its spaces and commas; an unquoted one runs to the next space
    assert p["rs"] == {0: 3, 6: "0w, 0h,1"}
    assert p["up"] == {0: 2, 1: 2.0, 2: 2.0, 9: "fancy_expr,with,commas"}


def test_uncounted_arrays_and_float_rounding():
    text = ("7767517\n2 2\nInput in 0 1 x\n"
            "Reduction r 1 1 x y 0=0 1=0 2=0.1 3=1,2 30=1.5,2,3e-1\n")
    params = parse_param(text)[1].params
    assert params[3] == (1, 2)
    assert params[2] == F32(0.1)            # the float32 the runtime uses, not the double
    assert params[30] == (1.5, 2.0, F32(0.3))


def test_crlf_and_trailing_blank_lines(tmp_path):
    (tmp_path / "m.param").write_bytes(b"7767517\r\n1 1\r\nInput in 0 1 x 0=3\r\n\r\n\r\n")
    (tmp_path / "m.bin").write_bytes(b"")
    graph = read_ncnn(tmp_path / "m.param", tmp_path / "m.bin")
    assert graph.inputs == ["x"] and graph.outputs == ["x"]
    assert graph.nodes["in"].params == {0: 3} and graph.nodes["in"].weights == []


def test_graph_inputs_outputs_and_unknown_shapes(tmp_path):
    (tmp_path / "m.param").write_text(TEXT)
    (tmp_path / "m.bin").write_bytes(b"")
    graph = read_ncnn(tmp_path / "m.param", tmp_path / "m.bin")
    assert graph.name == "m"
    assert graph.inputs == ["x"]
    assert graph.outputs == ["r", "u"]
    assert all(t.shape is None for t in graph.tensors.values()) and len(graph.tensors) == 9
    assert all(n.ncnn for n in graph.nodes.values())
    assert [n.name for n in graph.consumers("x")] == ["sp"]
    assert graph.producer("u").name == "up"


DUPLICATE_NAMES = """7767517
5 7
Input            in0          0 1 x
Split            splitncnn_0  1 2 x x1 x2
BinaryOp         add          2 1 x1 x2 y 0=0
Split            splitncnn_0  1 2 y y1 y2
BinaryOp         splitncnn_0@6 2 1 y1 y2 z 0=2
"""


def test_repeated_layer_names_are_accepted_like_ncnn(tmp_path):
    """pnnx writes `splitncnn_0` more than once; ncnn binds by blob name and never checks."""
    from converter import load_ncnn
    from converter.ncnn_side import runtime as ncnn_runtime
    (tmp_path / "m.param").write_text(DUPLICATE_NAMES)
    (tmp_path / "m.bin").write_bytes(b"")
    model = load_ncnn(tmp_path / "m.param", tmp_path / "m.bin")
    # the repeat gets its line appended, and never takes a name the file already uses
    assert [n.name for n in model.graph.topological()] == [
        "in0", "splitncnn_0", "add", "splitncnn_0@6_", "splitncnn_0@6"]
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    ours = model.run({"x": x})["z"]
    real = ncnn_runtime.run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {"x": x}, ["z"])["z"]
    np.testing.assert_array_equal(ours, real)

"""Data-movement layers against the real ncnn, compared exactly."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError, run
from converter.ir import Graph, Node

from .layer_check import Const, check, ids, interpret, run_real

SHAPES = [(12,), (6, 5), (4, 6, 5), (3, 4, 6, 5)]
AUTO = -233


def arange(shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_memorydata(tmp_path, shape):
    out = check(tmp_path, "Noop", {}, [Const(arange(shape))], exact=True)["out0"]
    np.testing.assert_array_equal(out, arange(shape))


def test_memorydata_without_extents_reads_no_weights(tmp_path):
    """ncnn loads nothing for a MemoryData with w=h=d=c=0, so the .bin must hold nothing for it
    (else every later buffer shifts); its one value is uninitialized, so interpreting it raises."""
    graph = Graph("g")
    graph.add_node(Node("empty", "MemoryData", [], ["empty"], ncnn=True))      # written first
    graph.add_node(Node("data", "MemoryData", [], ["data"], params={0: 3},
                        weights=[np.array([1, 2, 3], np.float32)], ncnn=True))
    graph.add_node(Node("layer", "Noop", ["data"], ["out0"], ncnn=True))
    graph.outputs = ["out0"]
    np.testing.assert_array_equal(run_real(tmp_path, graph, {})["out0"], [1, 2, 3])
    np.testing.assert_array_equal(run(graph, {})["out0"], [1, 2, 3])
    with pytest.raises(InterpreterError, match="uninitialized"):
        run(graph, {}, outputs=["empty"])


@pytest.mark.parametrize("n", [2, 3])
def test_split_and_noop(tmp_path, rng, n):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    outs = check(tmp_path, "Split", {}, [x], n_outputs=n, exact=True)
    assert len(outs) == n
    check(tmp_path, "Noop", {}, [x], exact=True)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_flatten(tmp_path, shape):
    check(tmp_path, "Flatten", {}, [arange(shape)], exact=True)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_concat_every_axis(tmp_path, rng, shape):
    for axis in list(range(len(shape))) + [-1]:
        parts = []
        for extent in (2, 16, 3):
            s = list(shape)
            s[axis] = extent
            parts.append(rng.standard_normal(s).astype(np.float32))
        check(tmp_path, "Concat", ids("Concat", axis=axis), parts, exact=True)


def test_concat_mismatch_raises():
    with pytest.raises(InterpreterError, match="equal other extents"):
        interpret("Concat", {}, [np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)])


SLICES = [
    dict(slices=[3, 5, 8]),
    dict(slices=[AUTO, AUTO, AUTO]),
    dict(slices=[2, AUTO, AUTO]),
    dict(slices=[4, 4]),                 # the rest of the axis is dropped
    dict(indices=[3, 9]),
    dict(indices=[-10, -2]),
]


@pytest.mark.parametrize("shape", [(16,), (16, 5), (4, 16, 5), (3, 16, 2, 4)], ids=str)
@pytest.mark.parametrize("how", SLICES, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_slice(tmp_path, shape, how):
    axis = shape.index(16)
    n = len(how["slices"]) if "slices" in how else len(how["indices"]) + 1
    check(tmp_path, "Slice", ids("Slice", axis=axis, **how), [arange(shape)], n_outputs=n, exact=True)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_slice_every_axis(tmp_path, rng, shape):
    for axis in range(-1, len(shape)):
        check(tmp_path, "Slice", ids("Slice", axis=axis, slices=[AUTO, AUTO]),
              [rng.standard_normal([2 * d for d in shape]).astype(np.float32)], n_outputs=2, exact=True)


def crop_offset_cases():
    yield (12,), dict(woffset=2, outw=5)
    yield (12,), dict(woffset=3, woffset2=4, outw=AUTO)
    yield (6, 5), dict(woffset=1, hoffset=2, outw=3, outh=AUTO)
    yield (6, 5), dict(woffset=0, hoffset=1, hoffset2=2, outw=AUTO, outh=AUTO)
    yield (4, 6, 5), dict(woffset=1, hoffset=2, coffset=1, outw=2, outh=3, outc=2)
    yield (4, 6, 5), dict(coffset=1, coffset2=1, outw=AUTO, outh=AUTO, outc=AUTO)
    yield (3, 4, 6, 5), dict(woffset=1, hoffset=1, doffset=1, coffset=1, outw=3, outh=4, outd=2, outc=2)
    yield (3, 4, 6, 5), dict(doffset=1, doffset2=1, outw=AUTO, outh=AUTO, outd=AUTO, outc=AUTO)


@pytest.mark.parametrize("shape,named", list(crop_offset_cases()), ids=str)
def test_crop_offsets(tmp_path, shape, named):
    check(tmp_path, "Crop", ids("Crop", **named), [arange(shape)], exact=True)


def crop_slice_cases():
    yield (12,), dict(starts=[2], ends=[7])
    yield (12,), dict(starts=[-5], ends=[-1], axes=[0])
    yield (6, 5), dict(starts=[1], ends=[4], axes=[1])
    yield (6, 5), dict(starts=[1, 2], ends=[-1, 0])             # end 0: to the end, in ncnn
    yield (4, 6, 5), dict(starts=[1, AUTO], ends=[3, 2], axes=[0, -1])
    yield (4, 6, 5), dict(starts=[0, 2], ends=[100, AUTO], axes=[1, 2])
    yield (3, 4, 6, 5), dict(starts=[1, 1, 2, 0], ends=[2, 3, 5, 4])
    yield (3, 4, 6, 5), dict(starts=[2], ends=[4], axes=[1])


@pytest.mark.parametrize("shape,named", list(crop_slice_cases()), ids=str)
def test_crop_starts_ends(tmp_path, shape, named):
    check(tmp_path, "Crop", ids("Crop", **named), [arange(shape)], exact=True)


@pytest.mark.parametrize("shape,ref_shape,named", [
    ((4, 6, 5), (2, 3, 4), dict(woffset=1, hoffset=2, coffset=1)),
    ((4, 6, 5), (3, 4), dict(woffset=1, hoffset=2)),
    ((6, 5), (3, 4), dict(woffset=1, hoffset=1)),
], ids=str)
def test_crop_to_reference_blob(tmp_path, shape, ref_shape, named):
    check(tmp_path, "Crop", ids("Crop", **named), [arange(shape), np.zeros(ref_shape, np.float32)], exact=True)


def test_crop_out_of_range_raises():
    with pytest.raises(InterpreterError, match="does not fit"):
        interpret("Crop", ids("Crop", starts=[5], ends=[3]), [arange((8,))])


RESHAPES = [
    ((4, 6, 5), dict(w=-1)),                            # 1-D: always a flatten
    ((4, 6, 5), dict(w=30, h=4)),
    ((4, 6, 5), dict(w=0, h=-1)),                       # 0 copies w
    ((4, 6, 5), dict(w=-1, h=0, c=0)),
    ((4, 6, 5), dict(w=5, h=2, c=-1)),
    ((4, 6, 5), dict(w=0, h=3, d=2, c=0)),
    ((3, 4, 6, 5), dict(w=0, h=0, c=-1)),
    ((3, 4, 6, 5), dict(w=0, h=0, d=0, c=0)),
    ((3, 4, 6, 5), dict(w=-1, h=4, d=9, c=1)),
    ((6, 5), dict(w=0, h=0, c=1)),
    ((6, 5), dict(w=3, h=-1, d=5, c=2)),
    ((12,), dict(w=0, h=1)),
    ((12,), dict(w=2, h=-1, c=2)),
    ((16, 6, 5), dict(w=-1, h=16)),                      # packed channels
    ((16, 6, 5), dict(w=30, h=2, c=8)),
    ((4, 6, 5), dict(w=6, h=-1, d=7, c=-233)),           # a -233 c ends the shape: 2-D
]


@pytest.mark.parametrize("shape,named", RESHAPES, ids=str)
def test_reshape(tmp_path, shape, named):
    check(tmp_path, "Reshape", ids("Reshape", **named), [arange(shape)], exact=True)


def test_reshape_1d_target_flattens_whatever_w_says(tmp_path):
    """The x86 Reshape flattens for any 1-D target; the reference one would fail on w=7."""
    out = check(tmp_path, "Reshape", ids("Reshape", w=7), [arange((2, 3, 4))], exact=True)["out0"]
    assert out.shape == (24,)


def test_reshape_bad_size_raises():
    with pytest.raises(InterpreterError, match="cannot hold"):
        interpret("Reshape", ids("Reshape", w=7, h=-1), [arange((2, 3, 4))])


@pytest.mark.parametrize("shape,order_types", [((5, 7), range(2)), ((3, 4, 5), range(6)), ((2, 3, 4, 5), range(24)),
                                               ((7,), range(1))], ids=str)
def test_permute(tmp_path, shape, order_types):
    for order_type in order_types:
        check(tmp_path, "Permute", ids("Permute", order_type=order_type), [arange(shape)], exact=True)


def test_permute_packed_channels(tmp_path):
    for order_type in range(6):
        check(tmp_path, "Permute", ids("Permute", order_type=order_type), [arange((16, 4, 8))], exact=True)


PADDINGS = [
    dict(left=2, right=1),
    dict(top=1, bottom=2, left=0, right=3),
    dict(top=2, bottom=1, left=1, right=2, value=-1.5),
    dict(top=1, left=1, front=1, behind=2),
    dict(front=2, behind=0, value=3.0),
]


@pytest.mark.parametrize("pad_type", [0, 1, 2], ids=["constant", "replicate", "reflect"])
@pytest.mark.parametrize("named", PADDINGS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
@pytest.mark.parametrize("shape", [(6,), (4, 5), (4, 4, 5), (16, 4, 5), (2, 4, 4, 5)], ids=str)
def test_padding(tmp_path, shape, named, pad_type):
    check(tmp_path, "Padding", ids("Padding", type=pad_type, **named), [arange(shape)], exact=True)


@pytest.mark.parametrize("shape,named", [((3, 4, 5), dict(top=1, left=2, front=1, behind=1)),
                                         ((2, 3, 4, 5), dict(top=1, right=1, front=1))], ids=str)
def test_padding_per_channel_values(tmp_path, shape, named):
    out_c = shape[0] + (named.get("front", 0) + named.get("behind", 0) if len(shape) == 3 else 0)
    values = np.arange(out_c, dtype=np.float32) + 100
    params = ids("Padding", per_channel_pad_data_size=out_c, **named)
    check(tmp_path, "Padding", params, [arange(shape)], [values], exact=True)


def test_permute_2d_beyond_transpose_fails_in_both(tmp_path):
    from converter.ncnn_side.runtime import NcnnError

    from .layer_check import one_layer_graph
    graph, feeds = one_layer_graph("Permute", ids("Permute", order_type=2), [arange((3, 4))])
    with pytest.raises(NcnnError, match="failed to compute"):
        run_real(tmp_path, graph, feeds)
    with pytest.raises(InterpreterError, match="order_type 2 on a 2-D blob"):
        run(graph, feeds)

"""Cast against the real ncnn: the float32 no-op, float16 and bfloat16 round trips, refusals."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError, run
from converter.ir import Graph, Node

from .layer_check import check, ids, interpret, run_real

# outer extents not divisible by 4 leave a tail that ncnn converts one value at a time
SHAPES = [(7,), (12,), (3, 5), (4, 5), (3, 3, 5), (4, 3, 5), (8, 3, 5), (2, 3, 2, 3), (4, 2, 3, 3)]


def cast_params(type_from, type_to):
    return ids("Cast", type_from=type_from, type_to=type_to)


def cast_chain(*routes) -> Graph:
    """Input -> Cast(route[0]) -> Cast(route[1]) -> ..."""
    graph = Graph("casts")
    graph.add_node(Node("input", "Input", [], ["b0"], ncnn=True))
    graph.inputs.append("b0")
    for i, route in enumerate(routes):
        graph.add_node(Node(f"cast{i}", "Cast", [f"b{i}"], [f"b{i + 1}"], params=cast_params(*route), ncnn=True))
    graph.outputs = [f"b{len(routes)}"]
    return graph


def awkward_values(rng, shape):
    """Random values, half of them replaced by ones rounding cares about: float16 overflow and
    subnormals, float16 ties (low 13 bits 0x1000) and bfloat16 ties (low 16 bits 0x8000)."""
    specials = np.array([70000.0, -65520.0, 65519.0, 65504.0, 1e-6, -3e-7, 6e-8, 3e-5, 0.1, 100.7, 0.0, -0.0],
                        np.float32)
    bits = rng.integers(0x3C000000, 0x44000000, 16, dtype=np.uint64).astype(np.uint32)
    ties = np.concatenate([(bits[:8] & 0xFFFF0000) | 0x8000, (bits[8:] & 0xFFFFE000) | 0x1000]).view(np.float32)
    pool = np.concatenate([specials, ties, -ties])
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    picked = rng.random(shape) < 0.5
    x[picked] = rng.choice(pool, int(picked.sum()))
    return x


@pytest.mark.parametrize("shape", [(7,), (3, 5), (3, 3, 5), (2, 3, 2, 3)], ids=str)
@pytest.mark.parametrize("route", [(1, 1), (2, 2), (4, 4), (0, 0)], ids=str)
def test_same_type_passes_through(tmp_path, rng, shape, route):
    check(tmp_path, "Cast", cast_params(*route), [awkward_values(rng, shape)], exact=True)


def test_float16_tail_rounds_ties_away_and_flushes_subnormals(tmp_path):
    # 7 values: the first 4 go through F16C (ties to even), the last 3 one by one
    tie, small = 1 + 2 ** -11, 3e-5
    x = np.array([tie, tie, small, small, tie, small, -tie], np.float32)
    real = run_real(tmp_path, cast_chain((1, 2), (2, 1)), {"b0": x})["b2"]
    up = 1 + 2 ** -10
    expected = np.array([1, 1, np.float16(small), np.float16(small), up, 0, -up], np.float32)
    np.testing.assert_array_equal(real, expected)
    np.testing.assert_array_equal(run(cast_chain((1, 2), (2, 1)), {"b0": x})["b2"], expected)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_float32_to_float16(tmp_path, rng, shape):
    # the runtime hands back the float16 blob itself: compare values
    check(tmp_path, "Cast", cast_params(1, 2), [awkward_values(rng, shape)], exact=True)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("via", [2, 4], ids=["float16", "bfloat16"])
def test_round_trip(tmp_path, rng, shape, via):
    graph, x = cast_chain((1, via), (via, 1)), awkward_values(rng, shape)
    real = run_real(tmp_path, graph, {"b0": x})["b2"]
    ours = run(graph, {"b0": x})["b2"]
    np.testing.assert_array_equal(ours, real)
    assert not np.array_equal(ours, x)          # the rounding happened


def test_bfloat16_ties_round_away_from_zero(tmp_path):
    # 1 + 2**-8 sits halfway between two bfloat16 values: ncnn rounds it up, not to even
    x = np.array([1 + 2 ** -8, -(1 + 2 ** -8), 1 + 3 * 2 ** -8], np.float32)
    real = run_real(tmp_path, cast_chain((1, 4), (4, 1)), {"b0": x})["b2"]
    np.testing.assert_array_equal(real, [1 + 2 ** -7, -(1 + 2 ** -7), 1 + 2 ** -6])
    np.testing.assert_array_equal(run(cast_chain((1, 4), (4, 1)), {"b0": x})["b2"], real)


@pytest.mark.parametrize("route", [(0, 1), (1, 0), (1, 3), (3, 1), (2, 4), (4, 2), (0, 2)], ids=str)
def test_garbage_routes_are_refused(route):
    with pytest.raises(InterpreterError, match="computes garbage"):
        interpret("Cast", cast_params(*route), [np.ones((2, 3), np.float32)])


def test_int8_round_trip_is_garbage_in_ncnn(tmp_path):
    x = np.array([1.5, -2.25, 3.0, 100.7], np.float32)
    real = run_real(tmp_path, cast_chain((1, 3), (3, 1)), {"b0": x})["b2"]
    assert not np.array_equal(real, np.round(x))


@pytest.mark.parametrize("type_from", [2, 4], ids=["float16", "bfloat16"])
def test_cast_from_half_on_float32_values_is_refused(tmp_path, type_from):
    x = np.array([0.1, 1.5], np.float32)
    real = run_real(tmp_path, cast_chain((type_from, 1)), {"b0": x})["b1"]
    assert not np.array_equal(real, x)          # ncnn reads the float32 bits as halves
    with pytest.raises(InterpreterError, match="would read their bits"):
        interpret("Cast", cast_params(type_from, 1), [x])


@pytest.mark.parametrize("shape", [(20,), (4, 5), (16, 3), (4, 1, 3), (3, 3, 5), (2, 3, 2, 3)], ids=str)
def test_bfloat16_ties_follow_the_cpus_lanes(tmp_path, shape):
    # every value a tie: on an AVX512-BF16 CPU the values the runtime converts eight at a time
    # (in packed order) round to even, the rest of each chunk away from zero; elsewhere all away
    x = np.full(shape, 1 + 2 ** -8, np.float32)
    x.flat[::2] *= -1
    real = run_real(tmp_path, cast_chain((1, 4), (4, 1)), {"b0": x})["b2"]
    np.testing.assert_array_equal(run(cast_chain((1, 4), (4, 1)), {"b0": x})["b2"], real)

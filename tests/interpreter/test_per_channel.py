"""Scale, Bias, ShuffleChannel, Normalize and StatisticsPooling against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

SHAPES = [(6,), (6, 5), (6, 4, 5), (6, 2, 3, 4)]


def outer(shape):
    return shape[0]


def channels(shape):
    return shape[0] if len(shape) >= 3 else 1


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bias_term", [0, 1])
def test_scale_with_own_weights(tmp_path, rng, shape, bias_term):
    n = outer(shape)
    weights = [rng.standard_normal(n)] + ([rng.standard_normal(n)] if bias_term else [])
    params = ids("Scale", scale_data_size=n, bias_term=bias_term)
    check(tmp_path, "Scale", params, [rng.standard_normal(shape)], weights)


@pytest.mark.parametrize("shape", SHAPES)
def test_scale_by_a_second_input(tmp_path, rng, shape):
    params = ids("Scale", scale_data_size=-233)
    check(tmp_path, "Scale", params, [rng.standard_normal(shape), rng.standard_normal(outer(shape))])


def test_scale_from_input_with_bias_is_refused(rng):
    with pytest.raises(InterpreterError, match="loads no bias"):
        interpret("Scale", ids("Scale", scale_data_size=-233, bias_term=1),
                  [rng.standard_normal((3, 4, 5)), rng.standard_normal(3)])


@pytest.mark.parametrize("shape", SHAPES)
def test_bias(tmp_path, rng, shape):
    n = channels(shape)
    check(tmp_path, "Bias", ids("Bias", bias_data_size=n), [rng.standard_normal(shape)], [rng.standard_normal(n)])


SHUFFLE_SHAPES = [(12, 3, 4), (6, 2, 2, 3), (12, 1, 1), (8, 2, 3), (16, 2, 2), (24, 1, 2), (48, 2, 1)]
SHUFFLE_GROUPS = [(1, 0), (2, 0), (3, 0), (4, 0), (8, 0), (1, 1), (2, 1), (3, 1), (6, 1)]


@pytest.mark.parametrize("shape,group,reverse", [(shape, g, r) for shape in SHUFFLE_SHAPES
                                                 for g, r in SHUFFLE_GROUPS if shape[0] % g == 0])
def test_shuffle_channel(tmp_path, rng, shape, group, reverse):
    """ncnn's x86 code packs 4, 8 or 16 channels and has its own paths for 2, 3 and 4 groups."""
    params = ids("ShuffleChannel", group=group, reverse=reverse)
    check(tmp_path, "ShuffleChannel", params, [rng.standard_normal(shape)], exact=True)


def test_shuffle_channel_rejects_indivisible_group(rng):
    """ncnn returns -100."""
    with pytest.raises(InterpreterError, match="group 4 does not divide the 6 channels"):
        interpret("ShuffleChannel", ids("ShuffleChannel", group=4), [rng.standard_normal((6, 2, 2))])


@pytest.mark.parametrize("group,reverse", [(2, 0), (1, 1)])
def test_shuffle_channel_refuses_2d_blobs(rng, group, reverse):
    """ncnn's x86 code shuffles a 2-D blob's packed rows for group 2 and crashes (SIGFPE) reversing."""
    with pytest.raises(InterpreterError, match="shuffles only the c axis"):
        interpret("ShuffleChannel", ids("ShuffleChannel", group=group, reverse=reverse), [rng.standard_normal((4, 6))])


def test_shuffle_channel_group_1_on_2d_blob_is_identity(tmp_path, rng):
    check(tmp_path, "ShuffleChannel", ids("ShuffleChannel", group=1), [rng.standard_normal((4, 6))], exact=True)


@pytest.mark.parametrize("shape", [(5, 3, 4), (4, 2, 3, 3)])
@pytest.mark.parametrize("across_spatial,across_channel", [(1, 1), (1, 0), (0, 1), (0, 0)])
@pytest.mark.parametrize("channel_shared", [0, 1])
@pytest.mark.parametrize("eps_mode", [0, 1, 2])
def test_normalize(tmp_path, rng, shape, across_spatial, across_channel, channel_shared, eps_mode):
    n = 1 if channel_shared else shape[0]
    params = ids("Normalize", across_spatial=across_spatial, across_channel=across_channel,
                 channel_shared=channel_shared, eps=0.01, eps_mode=eps_mode, scale_data_size=n)
    check(tmp_path, "Normalize", params, [rng.standard_normal(shape)], [rng.standard_normal(n)])


@pytest.mark.parametrize("eps_mode", [0, 1, 2])
def test_normalize_eps_on_a_zero_blob(tmp_path, rng, eps_mode):
    """An all-zero position shows where each eps mode puts eps."""
    x = rng.standard_normal((4, 3, 3))
    x[:, 1, 1] = 0
    params = ids("Normalize", across_spatial=0, across_channel=1, eps=0.5, eps_mode=eps_mode, scale_data_size=4)
    check(tmp_path, "Normalize", params, [x * 0.1], [rng.standard_normal(4)])


def test_normalize_across_channel_defaults_to_1(tmp_path, rng):
    """normalize.cpp reads param 4 with default 1 (operators.md says 0)."""
    params = {0: 0, 3: 3}               # across_spatial 0, scale_data_size 3; no param 4 written
    out = check(tmp_path, "Normalize", params, [rng.standard_normal((3, 4, 4))], [np.ones(3)])
    np.testing.assert_allclose((out["out0"] ** 2).sum(axis=0), 1, rtol=1e-3)


@pytest.mark.parametrize("shape", [(5, 3, 4), (3, 2, 3, 4), (4, 7), (9,)])
@pytest.mark.parametrize("include_stddev", [0, 1])
def test_statistics_pooling(tmp_path, rng, shape, include_stddev):
    x = rng.standard_normal(shape) + 2
    check(tmp_path, "StatisticsPooling", ids("StatisticsPooling", include_stddev=include_stddev), [x])


@pytest.mark.parametrize("scale_blob,match", [(np.ones((3, 1, 1)), "1-D or 2-D scale blob"),
                                              (np.ones(2), "has 2 values for the 3 rows")])
def test_scale_blob_ncnn_misreads_is_refused(rng, scale_blob, match):
    """Real ncnn reads a (3,1,1) blob's channel padding as scales (gives 1,0,0 for 1,2,3) and
    reads past a short one."""
    with pytest.raises(InterpreterError, match=match):
        interpret("Scale", ids("Scale", scale_data_size=-233), [rng.standard_normal((3, 2, 2)), scale_blob])

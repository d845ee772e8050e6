"""The ordered pass pipeline: ONNX Graph -> ncnn Graph. Each pass is linear in graph size."""
from __future__ import annotations

import time
from typing import Callable

from converter.ir import Graph

from .apply_int8 import apply_int8
from .carry_quantized_as_float import carry_quantized_as_float
from .convert_batched_conv1d import convert_batched_conv1d
from .convert_flat_reshape import convert_flat_reshape
from .convert_innerproduct_gemm import convert_innerproduct_gemm
from .convert_log_buckets import convert_log_buckets
from .convert_outer_matmul import convert_outer_matmul
from .convert_pointwise_conv_innerproduct import convert_pointwise_conv_innerproduct
from .convert_window_gathers import convert_window_gathers
from .drop_activation_qdq import drop_activation_qdq
from .eliminate_dead import eliminate_dead
from .eliminate_empty_concat_inputs import eliminate_empty_concat_inputs
from .eliminate_identity_qdq import eliminate_identity_qdq
from .eliminate_noop import eliminate_noop
from .expand_dynamic_quantization import expand_dynamic_quantization
from .expand_qlinear import expand_qlinear
from .expand_small_attention import expand_small_attention
from .express_shapes import express_shapes
from .declare_input_shapes import declare_input_shapes
from .fix_broadcast import check_binary_ranks, fix_broadcast
from .flatten_gather_indices import flatten_gather_indices
from .flatten_matmul_rows import flatten_matmul_rows
from .fold_reshape_chains import fold_reshape_chains
from .fold_scale_into_matmul import fold_scale_into_matmul
from .convert_einsum_transpose import convert_einsum_transpose
from .fold_transpose_chains import fold_transpose_chains
from .fold_constants import fold_constants
from .fit_target_release import fit_target_release
from .fuse_activation import fuse_activation
from .fuse_attention import fuse_attention
from .fuse_channel_shuffle import fuse_channel_shuffle
from .fuse_conv_affine import fuse_conv_affine
from .fuse_conv_batchnorm import fuse_conv_batchnorm
from .fuse_decoder_attention import fuse_decoder_attention
from .fuse_gelu import fuse_gelu
from .fuse_gelu_tanh import fuse_gelu_tanh
from .fuse_groupnorm import fuse_groupnorm
from .fuse_hardswish import fuse_hardswish
from .fuse_innerproduct_bias import fuse_innerproduct_bias
from .fuse_layernorm import fuse_layernorm
from .fuse_recurrent_cells import fuse_recurrent_cells
from .fuse_rmsnorm import fuse_rmsnorm
from .fuse_rotary_embed import fuse_rotary_embed
from .fuse_sdpa import fuse_sdpa
from .fuse_swish import fuse_swish
from .hoist_relu_over_qdq import hoist_relu_over_qdq
from .hoist_shared_projections import hoist_shared_projections
from .infer_shapes import infer_shapes
from .inline_if import inline_if
from .insert_split import check_single_readers, insert_split
from .insert_wide_matmul_reshapes import insert_wide_matmul_reshapes
from .lower_onnx import check_all_lowered, lower_onnx
from .materialize_constants import materialize_constants
from .merge_batch_into_channels import merge_batch_into_channels
from .merge_broadcast_axes import merge_broadcast_axes
from .merge_wide_axes import merge_wide_axes
from .move_input_layout import move_input_layout
from .narrow_quantize_clips import narrow_quantize_clips
from .plan_int8 import plan_int8
from .refuse_empty_blobs import refuse_empty_blobs
from .resolve_cache_positions import resolve_cache_positions
from .resolve_symbolic_extents import resolve_symbolic_extents
from .resolve_sequences import resolve_sequences
from .rewrite_division_nan_guard import rewrite_division_nan_guard
from .rewrite_softmax_nan_guard import rewrite_softmax_nan_guard
from .share_repeated_weights import share_repeated_weights
from .sink_quantize import sink_quantize
from .split_wide_reductions import split_wide_reductions
from .split_wide_transposes import split_wide_transposes
from .unroll_loops import unroll_loops
from .unroll_peephole_lstm import unroll_peephole_lstm

Pass = Callable[[Graph], dict]

PIPELINE: list[Pass] = [
    # QLinearConv/QLinearMatMul become DQ -> float op -> Q, which plan_int8 then reads
    expand_qlinear,
    # before folding: a constant weight minus its zero point folds to float weights
    expand_dynamic_quantization,
    # a QuantizeLinear before a Reshape/Transpose moves below it, so the pair meets the MatMul plan_int8 reads
    sink_quantize,
    # before folding, which turns DequantizeLinear's int8 weights into float ones
    plan_int8,
    # fast int8 only: right after plan_int8 (its pairs and planned layers), before the exact-mode
    # rewrites of pairs (hoist_relu_over_qdq, eliminate_identity_qdq), which then find none to rewrite
    drop_activation_qdq,
    # after plan_int8 (the int8 layers it planned keep reading their pair), before folding; a Relu
    # moved before its pair makes the pair after it repeat that one, for eliminate_identity_qdq
    hoist_relu_over_qdq,
    eliminate_identity_qdq,
    # before folding, which would turn the first step's product with a zero initial state into a
    # constant the cell pattern no longer shows: unrolled LSTM/GRU/RNN cells become one recurrent op
    fuse_recurrent_cells,
    # shape chains and constant subgraphs become constants first, so fusions and
    # lowerings see constant weights and static shapes
    fold_constants,
    # folded shape chains let onnx's inference fill shapes it could not see at load time
    infer_shapes,
    # --nchw-input: once folding made a normalisation's divisor a constant and inference gave every
    # tensor its shape, before any pass rewrites what reads the input (fusions, unrolled bodies)
    move_input_layout,
    # a Loop with a constant trip count becomes copies of its body, folded and inferred in order; before
    # inline_if, which refuses the Loops left (an If inside a body is left a Loop, refused there too)
    unroll_loops,
    # an If whose condition folded to a constant (values, or sizes known by now) becomes its
    # branch; the branch's nodes and what they feed are folded and re-inferred in the same walk
    inline_if,
    # after both (a sequence is built in an unrolled Loop or a branch): sequences read at constant
    # positions become their tensors
    resolve_sequences,
    # once folding and inference made the length a number (inlined branches included): an LSTM with
    # peepholes, which ncnn's LSTM lacks, is written out step by step in ONNX ops before fusions and lowering
    unroll_peephole_lstm,
    # what still depends on run-time sizes (inlined branches included): Reshape targets become
    # ncnn expressions
    express_shapes,
    # once run-time sizes are terms: extents that are numbers (a dynamic batch's 1) filled in,
    # broadcasts and gathers that change nothing dropped, so fusions see the shapes they match
    resolve_symbolic_extents,
    # after it (batch extents filled, identity gathers gone): positions offset by a run-time cache length
    # (a decoder step with past) gather rows by a Slice, and causal masks that hold everywhere fold
    resolve_cache_positions,
    # after folding (a chain of constants is a constant by then) and before lowering: an integer -> Log ->
    # integer chain on a run-time grid (T5's relative buckets) becomes exact integer thresholds
    convert_log_buckets,
    # once extents are numbers: a Concat's empty inputs (a [d:d] pass-through slice) go before any
    # fusion or lowering meets them, ncnn holding no empty blob
    eliminate_empty_concat_inputs,
    # fusions match ONNX patterns, so they run before lowering
    fuse_conv_batchnorm,
    # after BatchNormalization folding: a Conv -> BN -> Mul chain folds both into the Conv
    fuse_conv_affine,
    fuse_swish,
    fuse_hardswish,
    # layer norm first: its variance step, (x - mean) / sqrt(mean((x - mean)^2) + eps), is also an
    # RMS norm of x - mean, which fuse_rmsnorm would take, leaving the mean as a separate layer
    fuse_layernorm,
    fuse_rmsnorm,
    # on the ONNX ops HF's apply_rotary_pos_emb writes (Slice/Neg/Concat/Mul/Add, cos and sin from
    # Concat(freqs, freqs)), before merge_wide_axes and lowering take them apart; independent of the norms
    fuse_rotary_embed,
    # before merge_batch_into_channels, which would take the InstanceNormalization over a batch
    fuse_groupnorm,
    # before merge_broadcast_axes and merge_wide_axes, which would merge its 5-D middle into 4 axes
    fuse_channel_shuffle,
    fuse_gelu,
    fuse_gelu_tanh,
    # after the GELU/Swish fusions (their x * ... products must not be taken for a scale) and before
    # fuse_attention, which then fuses the scaled output projection
    fold_scale_into_matmul,
    # after fold_constants (head reshapes need static shapes) and before merge_broadcast_axes
    # (a fused qkv projection is cut into q, k, v through 5-D tensors that pass would merge)
    fuse_attention,
    # after fuse_attention, which takes whole multi-head blocks (projections and all) first; a decoder's
    # masked attention over its cache (grouped-query heads, run-time lengths) before fuse_sdpa, which
    # takes unmasked static blocks only
    fuse_decoder_attention,
    fuse_sdpa,
    # after the Conv fusions (a fused BatchNorm rides along); a 1-D Conv over a batch ncnn
    # cannot drop becomes a 2-D one before lowering
    convert_batched_conv1d,
    # after both (a fused BatchNorm rides along, batched 1-D Convs are taken): channel-wise ops
    # over a batch ncnn cannot drop run with the batch merged into the channels, before lowering
    merge_batch_into_channels,
    # ONNX ops in, ONNX ops out (Max/Sub/ReduceMax/Softmax/Mul): before the axis merge and lowering
    rewrite_softmax_nan_guard,
    # likewise ONNX ops in and out (Equal/And/Cast/Add): the atan2 guard of torch.export
    rewrite_division_nan_guard,
    # a gathered tensor of windows wider than ncnn that is only summed and scaled becomes MatMuls by
    # constants before the axis merges, which would refuse it
    convert_window_gathers,
    # a gathered tensor wider than ncnn that is only reshaped gets flat indices before lowering
    flatten_gather_indices,
    # before lowering: tensors wider than 4 ncnn axes must be merged before any layer is built
    merge_broadcast_axes,
    # a one-operand Einsum that only reorders (SD3's unpatchify) is a Transpose: before the chain fold
    # and the wide-axis passes below, which fit wide Transposes and not Einsums
    convert_einsum_transpose,
    # before the split below and the axis merges: two Transposes in a row become one (or none)
    fold_transpose_chains,
    # a Transpose moving 5+ axis groups becomes two moving at most 4, so merge_wide_axes can fit both
    split_wide_transposes,
    # a Linear right after a wide Transpose reads it through a Reshape, so the two group its axes apart
    insert_wide_matmul_reshapes,
    # a wide reduction over axes apart from each other: one axis at a time, each step fits
    split_wide_reductions,
    # what is still wide runs through reshapes, transposes, gathers...: merged over the whole chain; after
    # express_shapes (rewrites its run-time targets) and the fusions (they match the ONNX shapes)
    merge_wide_axes,
    # int8 tensors that MaxPool/Reshape/Concat... carry between QOperator nodes become float32 holding the
    # same whole numbers; after every pass that asks onnx's shape inference, which would insist on int8
    carry_quantized_as_float,
    # after the fusions (fuse_recurrent_cells took the cells it could; attention takes its projections)
    # and the shape passes (static 2-D inputs): per-step products by one weight become one product
    hoist_shared_projections,
    # after every fusion that matches a MatMul (an attention's products are not to be taken for a Mul);
    # before flatten_matmul_rows, which would flatten the rows of what is a broadcast product
    convert_outer_matmul,
    # after every fusion that matches a MatMul (attention projections, scales); right before lowering
    flatten_matmul_rows,
    lower_onnx,
    # right after lowering: the planned layers still read the dequantized tensor and hold the
    # exact dequantized weight (checked); the Q/DQ layers it bypasses die in eliminate_dead
    apply_int8,
    # needs lowered BinaryOps and the ONNX shapes still on their tensors; runs before
    # constants become MemoryData so a reshaped constant is just different dims
    fix_broadcast,
    # while constants are still tensor values, before they become MemoryData layers
    fuse_innerproduct_bias,
    # after the bias is folded in (Gemm takes it as C); before fuse_activation, which would fuse
    # an activation into an InnerProduct that Gemm cannot carry
    convert_innerproduct_gemm,
    # on the final blobs' shapes (static lengths pick the form), after the mask is lowered and before
    # constants become MemoryData; the Gemms it writes take no activation, like convert_innerproduct_gemm's
    expand_small_attention,
    # --share-weights only: on the final Gemms (convert_innerproduct_gemm and expand_small_attention wrote
    # theirs), while B is still a weight; the one B it keeps becomes a MemoryData in materialize_constants
    share_repeated_weights,
    materialize_constants,
    eliminate_dead,
    # before fold_reshape_chains (a Flatten after the pixel it gives back folds away) and fuse_activation
    # (the activations it moves onto the vector then fuse into the InnerProduct)
    convert_pointwise_conv_innerproduct,
    # on the final layers (lowering and fix_broadcast both write Reshapes), after dead readers are
    # gone so a Reshape read by one live layer is seen as such
    fold_reshape_chains,
    # after the fold, which may leave a chain's last Reshape as the one to one axis
    convert_flat_reshape,
    # after both, which leave Noops where a fold changes nothing; before fuse_activation, which then
    # sees the activation as its producer's reader
    eliminate_noop,
    # on the layers ncnn will run, before any file could be written
    refuse_empty_blobs,
    # after dead readers are gone, so an activation is more often its producer's only reader
    fuse_activation,
    # after fuse_activation: a quantizer's clip joins the activation a Conv already carries
    narrow_quantize_clips,
    # on the final layers, for an older --target-ncnn: the forms it lacks (logaddexp, sign, Flip) written
    # in ones it has; before insert_split, as the forms read a blob more than once
    fit_target_release,
    # on the final inputs (no pass after it changes an input's shape)
    declare_input_shapes,
    # last: it counts the final readers of each blob
    insert_split,
]

# what a pass promises the passes after it (checked after it runs, like torch.fx's ensures)
INVARIANTS = {lower_onnx: check_all_lowered, fix_broadcast: check_binary_ranks, insert_split: check_single_readers}


def run_pipeline(graph: Graph, skip: set[Pass] = frozenset(),
                 progress: Callable[[str], None] | None = None) -> dict:
    """Run every pass in order (except `skip`), checking each pass's invariant; returns merged stats.
    `progress(stage)` is told each pass's name as it starts (the CLI shows slow conversions)."""
    stats: dict = {"pass_seconds": {}}
    for p in PIPELINE:
        if p in skip:
            continue
        if progress is not None:
            progress(p.__name__.replace("_", " "))
        start = time.perf_counter()
        stats.update(p(graph) or {})
        stats["pass_seconds"][p.__name__] = time.perf_counter() - start
        check = INVARIANTS.get(p)
        if check is not None:
            try:
                check(graph)
            except AssertionError as exc:
                raise AssertionError(f"pass {p.__name__} broke its invariant: {exc}") from None
    return stats

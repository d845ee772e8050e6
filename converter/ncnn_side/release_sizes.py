"""Sizes for a release without shape expressions, and the release facts every conversion records.

Releases before 20250428 cannot parse the string params (Reshape 6=, Interp 9=, Crop 19-21) that
let one file run at every input size, and those before 20260113 do not compute Crop's. For such a
target, a conversion whose files hold one it lacks is made again at fixed input sizes (the user's
--input-shape where given, else the sizes verify would choose), with a warning that says which: an
older release's file then runs at those sizes only.
"""
from __future__ import annotations

from converter.ir import ConversionError, Graph
from converter.ncnn_side.releases import NEWEST, PARAMS
from converter.ncnn_side.release_target import fit_to_release, min_version

EXPRESSION_PARAMS = {("Reshape", 6), ("Interp", 9), ("Crop", 19), ("Crop", 20), ("Crop", 21)}


class NeedsFixedSizes(ConversionError):
    """Raised by the conversion at dynamic sizes; api.convert converts again at `shapes()`."""

    def __init__(self, node, examples: dict[str, list[int]], target: int, decoder: bool = False):
        self.node, self.examples, self.target, self.decoder = node, examples, target, decoder
        newer = PARAMS[(node.op, _expression_id(node))]
        fix = (f"a decoder step's cache grows at run time, so no input size fixes it: target {newer} or newer"
               if decoder else f"fix the input sizes with --input-shape, or target {newer} or newer")
        super().__init__(f"{node.describe()} needs a shape expression ({node.op} in ncnn layer "
                         f"'{node.name}'), which ncnn {target} does not read or compute: {fix}")

    def shapes(self, given: dict | None) -> dict[str, list[int]]:
        """The user's shapes where given ('?' dims filled in), the example sizes elsewhere."""
        shapes = {name: list(dims) for name, dims in self.examples.items()}
        for name, dims in (given or {}).items():
            example = shapes.get(name, dims)
            shapes[name] = [e if d is None else d for d, e in zip(dims, example)] if len(example) == len(dims) else dims
        return shapes

    def noted(self, converted):
        """The conversion at fixed sizes, with the warning that says which."""
        converted.stats.setdefault("warnings", []).append(self.warning())
        return converted

    def warning(self) -> str:
        sizes = ", ".join(f"{name}={','.join(map(str, dims))}" for name, dims in self.examples.items())
        return (f"ncnn {self.target} reads no shape expressions (the first: {self.node.describe()}): the "
                f"files run at the input sizes {sizes} only; choose others with --input-shape")


def _expression_id(node) -> int:
    return next(pid for pid in node.params if (node.op, pid) in EXPRESSION_PARAMS)


def _unreadable_expression(node, target: int) -> bool:
    return any((node.op, pid) in EXPRESSION_PARAMS and PARAMS[(node.op, pid)] > target for pid in node.params)


def _dynamic_inputs(graph: Graph) -> bool:
    shapes = [graph.tensors[name].onnx_shape or graph.tensors[name].shape for name in graph.inputs]
    return any(shape is not None and None in shape for shape in shapes)


def fit_release(graph: Graph, target: int | None, examples: tuple[dict, list], decoder: bool = False) -> dict:
    """After the pass pipeline: fit the graph to `target` (default the newest release known), or
    ask for fixed sizes (NeedsFixedSizes), or refuse; the stats record the release the files need.
    `decoder`: a decoder step with a cache (converter/shapes/decoder_layout.py), which fixed sizes
    cannot serve."""
    target = target or NEWEST
    if _dynamic_inputs(graph):
        node = next((n for n in graph.topological() if _unreadable_expression(n, target)), None)
        if node is not None:
            raise NeedsFixedSizes(node, examples[0], target, decoder)
    stats = fit_to_release(graph, target)
    return {**stats, "ncnn_target": target, "ncnn_min_version": min_version(graph)}

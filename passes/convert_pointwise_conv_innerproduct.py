"""Turn a 1x1 Convolution over a single pixel (an ncnn blob (C, 1, 1), as in a squeeze-excitation
block after global pooling) into an InnerProduct over the C values.

Both compute y[n] = act(sum_c W[n, c] x[c] + b[n]) (InnerProduct carries the same fused activation
params). On the x86 pip runtime (1.0.20261020, one thread) global pooling -> Reshape (C, 1, 1) ->
two 1x1 Convolutions took 9.2 us against 6.1 us for the pooled vector through two InnerProducts
(C=192, 48 hidden; 0.0115 against 0.0067 ms at C=384), the form pnnx writes. Only a Convolution
whose input is a Reshape of a (C) blob is turned: the InnerProduct reads the vector (the Reshape
dies when nothing else reads it), and a Reshape gives its (N) result back the (N, 1, 1) shape, after
the activations that alone read it (they run on the vector), which the next such Convolution skips
in turn. Where the pixel comes otherwise (a keepdims ReduceMean) the Reshape would be one more
layer: efficientnet_b0 ran 1.027x slower so, mobilenetv3_small 0.987x with a pooled vector. int8,
dynamic-weight, padded, strided or dilated Convolutions stay. One walk.
"""
from __future__ import annotations


from converter.ir import Graph, Node
from converter.lowering.common import layer, new_tensor
from converter.ncnn_side.layers import SPECS

# one value in, one value out, whatever the blob's shape
ELEMENTWISE = {"ReLU", "Clip", "Sigmoid", "Swish", "TanH", "HardSigmoid", "HardSwish", "Mish", "ELU", "SELU", "GELU"}


def _pointwise(graph: Graph, node: Node) -> bool:
    if node.op != "Convolution" or not node.ncnn or len(node.inputs) != 1:
        return False
    p = SPECS["Convolution"].resolve(node.params)
    shape = graph.tensors[node.inputs[0]].ncnn_shape
    return (p.kernel_w == p.kernel_h == 1 and p.stride_w == p.stride_h == 1 and p.dilation_w == p.dilation_h == 1
            and p.pad_left == p.pad_right == p.pad_top == p.pad_bottom == 0 and not p.int8_scale_term
            and not p.dynamic_weight and shape is not None and len(shape) == 3 and shape[1:] == (1, 1)
            and shape[0] is not None and p.weight_data_size == p.num_output * shape[0])


def _vector(graph: Graph, name: str, count: int) -> str | None:
    """The (count) blob that Reshape `name`'s producer reshapes, if it is one."""
    reshape = graph.producer(name)
    if reshape is None or reshape.op != "Reshape" or not reshape.ncnn or len(reshape.inputs) != 1:
        return None
    source = graph.tensors[reshape.inputs[0]].ncnn_shape
    return reshape.inputs[0] if source == (count,) else None


def _elementwise_on_vector(graph: Graph, vector: str, out: str) -> tuple[str, str]:
    """Move the activations that alone read `out` (one element in, one out) onto `vector`, so the
    Reshape back to a pixel comes after them and the next 1x1 Convolution can skip it; returns
    (the last vector, the tensor the Reshape must write)."""
    while True:
        readers = graph.consumers(out)
        if (graph.use_count(out) != 1 or out in graph.outputs or len(readers) != 1 or not readers[0].ncnn
                or not _is_elementwise(readers[0])):
            return vector, out
        act = readers[0]
        moved = new_tensor(graph, f"{act.outputs[0]}_vector", graph.tensors[vector].shape, 0)
        graph.remove_node(act)
        graph.add_node(Node(act.name, act.op, [vector], [moved], params=dict(act.params), weights=list(act.weights),
                            ncnn=True, origin=act.origin))
        vector, out = moved, act.outputs[0]


def _is_elementwise(node: Node) -> bool:
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        return False
    return node.op in ELEMENTWISE or node.op == "BinaryOp" and node.params.get(1, 0) == 1


def convert_pointwise_conv_innerproduct(graph: Graph) -> dict:
    converted = 0
    for node in graph.topological():
        if not _pointwise(graph, node):
            continue
        p = SPECS["Convolution"].resolve(node.params)
        x = node.inputs[0]
        vector = _vector(graph, x, graph.tensors[x].ncnn_shape[0])
        if vector is None:      # a pixel made otherwise (a keepdims Reduction) would need a Reshape more
            continue
        out = node.outputs[0]
        flat = new_tensor(graph, f"{out}_vector", (1, p.num_output), 0)
        params = {0: p.num_output, 1: p.bias_term, 2: p.weight_data_size,
                  **{k: node.params[k] for k in (9, 10) if k in node.params}}
        graph.remove_node(node)
        graph.add_node(Node(node.name, "InnerProduct", [vector], [flat], params=params,
                            weights=list(node.weights), ncnn=True, origin=node.origin))
        flat, out = _elementwise_on_vector(graph, flat, out)
        graph.add_node(layer(node, graph, "Reshape", [flat], [out], {0: 1, 1: 1, 2: p.num_output},
                             suffix="_pixel"))
        if not graph.consumers(x) and x not in graph.outputs:
            graph.remove_node(graph.producer(x))
        converted += 1
    if converted:
        graph.remove_unused_tensors()
    return {"pointwise_conv_as_innerproduct": converted}

"""Lowering an ONNX node through other ONNX ops: synthetic nodes lowered one by one by their own
lowerings (Einsum's transposes and products, DFT's basis product), the last writing the node's output."""
from __future__ import annotations

import numpy as np

from converter.shapes.batch_axis import follow_batch_axis

from ..ir import Graph, Node, Tensor
from . import LOWERINGS


class OnnxSteps:
    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node = graph, node
        self.steps: list[tuple] = []

    def add(self, op: str, inputs: list[str], shape: tuple, attrs: dict | None = None,
            const: np.ndarray | None = None) -> str:
        """A step op(inputs [+ const as the last input]) whose output has `shape`; returns its name."""
        name = self.graph.fresh_name(f"{self.node.outputs[0]}_{op.lower()}")
        self.steps.append((op, list(inputs), name, shape, attrs or {}, const))
        return name

    def shape(self, name: str) -> tuple:
        """The shape of a step's output or of a graph tensor."""
        for _, _, step_name, shape, _, _ in self.steps:
            if step_name == name:
                return shape
        return self.graph.tensors[name].shape

    def lower(self) -> list[Node]:
        final = self.node.outputs[0]
        layers = []
        for k, (op, inputs, name, shape, attrs, const) in enumerate(self.steps):
            last = k == len(self.steps) - 1
            out = final if last else name
            if const is not None:
                inputs = inputs + [self.graph.add_constant(f"{name}_arg", const).name]
            step = Node(f"{self.node.name}_{op.lower()}{k}", op, inputs, [out], attrs, origin=self.node.name)
            if not last:
                follow_batch_axis(self.graph, step,
                                  self.graph.add_tensor(Tensor(out, shape, self.graph.tensors[inputs[0]].dtype)))
            layers += LOWERINGS[op](self.graph, step)
        return layers

"""ONNX op groups that passes and rules share, so adding an op to a family happens in one place."""
from __future__ import annotations

# numpy-broadcasting arithmetic (Max/Min/Sum/Mean take any number of inputs)
ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod"})
COMPARISON = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
LOGICAL = frozenset({"And", "Or", "Xor"})
# every input broadcasts numpy-style (trailing axes aligned) into the output
BROADCASTING = ARITHMETIC | COMPARISON | LOGICAL | {"Where", "PRelu"}
# one input, an output of the same shape, computed value by value
UNARY_ELEMENTWISE = frozenset({
    "Identity", "Cast", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu",
    "Selu", "Celu", "Clip", "Softplus", "Softsign", "Mish", "Gelu", "Erf", "Shrink", "ThresholdedRelu",
    "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Not", "IsNaN", "IsInf"})
# values do not depend on their position: merging or reordering axes around these changes nothing
ELEMENTWISE = BROADCASTING | UNARY_ELEMENTWISE
# reductions over `axes` (keepdims or not): the Reduce* family
REDUCE = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                    "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
# opset < 7: the ops that took `broadcast=1, axis=k` (B aligned to A from axis k)
LEGACY_BROADCAST = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"})

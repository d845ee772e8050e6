"""Build the small ONNX test models used by the converter into <repo>/models/.

Usage:
    python scripts/build_models.py            # (re)write models/*.onnx
    python scripts/build_models.py --check    # validate the files on disk

Every model is ir_version 8 / opset 17, float32, with deterministic weights
(fixed seed per model) scaled ~N(0, 1/sqrt(fan_in)) so activations stay O(1).
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
IR_VERSION = 8
OPSET = 17


class Graph:
    """Tiny builder: collects nodes/initializers and invents unique tensor names."""
    PRODUCER = "build_models.py"

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self._count = {}

    def _fresh(self, prefix):
        i = self._count[prefix] = self._count.get(prefix, -1) + 1
        return f"{prefix}_{i}"

    def const(self, value, dtype=np.float32, name=None):
        name = name or self._fresh("const")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def randn(self, *shape, scale=1.0):
        return self.rng.standard_normal(shape) * scale

    def weight(self, *shape, fan_in):
        return self.const(self.randn(*shape, scale=1 / np.sqrt(fan_in)))

    def op(self, op_type, *inputs, out=None, **attrs):
        out = out or self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=f"{op_type}:{out}", **attrs))
        return out

    # -- composite layers ---------------------------------------------------
    def conv(self, x, cin, cout, k=3, stride=1, pad=None, group=1, dilation=1, bias=True):
        pad = (k // 2) * dilation if pad is None else pad
        fan_in = cin // group * k * k
        inputs = [x, self.weight(cout, cin // group, k, k, fan_in=fan_in)]
        if bias:
            inputs.append(self.const(self.randn(cout, scale=0.1)))
        return self.op("Conv", *inputs, kernel_shape=[k, k], strides=[stride] * 2,
                       pads=[pad] * 4, group=group, dilations=[dilation] * 2)

    def bn(self, x, c):
        # Non-trivial stats so an un-folded / mis-folded BN is actually visible.
        return self.op("BatchNormalization", x,
                       self.const(1 + self.randn(c, scale=0.1)),  # scale
                       self.const(self.randn(c, scale=0.1)),  # bias
                       self.const(self.randn(c, scale=0.1)),  # running mean
                       self.const(self.rng.uniform(0.5, 1.5, c)),  # running var
                       epsilon=1e-5)

    def linear(self, x, cin, cout):
        """x @ W + b, transformer style (W stored as (cin, cout))."""
        y = self.op("MatMul", x, self.weight(cin, cout, fan_in=cin))
        return self.op("Add", y, self.const(self.randn(cout, scale=0.1)))

    def layer_norm(self, x, c):
        return self.op("LayerNormalization", x, self.const(1 + self.randn(c, scale=0.1)),
                       self.const(self.randn(c, scale=0.1)), axis=-1, epsilon=1e-5)

    def build(self, inputs, outputs, doc):
        """inputs/outputs: {name: shape}, all float; returns a checked, shape-inferred ModelProto."""
        float_typed = lambda entries: {n: (s, TensorProto.FLOAT) for n, s in entries.items()}  # noqa: E731
        return self.build_typed(float_typed(inputs), float_typed(outputs), doc)

    def build_typed(self, inputs, outputs, doc):
        """inputs/outputs: {name: (shape, TensorProto type)}."""
        vi = lambda n, s: helper.make_tensor_value_info(n, s[1], list(s[0]))  # noqa: E731
        graph = helper.make_graph(self.nodes, self.name, [vi(n, s) for n, s in inputs.items()],
                                  [vi(n, s) for n, s in outputs.items()], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  ir_version=IR_VERSION, producer_name=self.PRODUCER, doc_string=doc)
        onnx.checker.check_model(model, full_check=True)
        return model


def cnn_small() -> onnx.ModelProto:
    """ResNet-style CNN: conv variants (bias/no-bias+BN, depthwise, dilated, strided), pools, many activations, Concat, Gemm."""
    g = Graph("cnn_small", seed=1)
    x = g.op("Relu", g.conv("input", 3, 16))  # Conv with bias
    x = g.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 16x16x16

    # Residual block whose Add joins two conv branches (not conv + identity).
    a = g.op("Relu", g.bn(g.conv(x, 16, 16, bias=False), 16))
    a = g.bn(g.conv(a, 16, 16, bias=False), 16)
    b = g.conv(x, 16, 16, k=1)
    x = g.op("Relu", g.op("Add", a, b))

    x = g.op("Clip", g.conv(x, 16, 16, group=16), g.const(0.0), g.const(6.0))  # depthwise + ReLU6
    x = g.op("LeakyRelu", g.conv(x, 16, 16, dilation=2), alpha=0.1)  # dilated, pads 2
    x = g.op("HardSwish", g.conv(x, 16, 32, stride=2))  # strided -> 32x8x8

    hs = g.op("HardSigmoid", g.conv(x, 32, 16, k=1))
    s = g.conv(x, 32, 16, k=1)
    silu = g.op("Mul", s, g.op("Sigmoid", s))  # SiLU = x * sigmoid(x)
    x = g.op("Concat", hs, silu, axis=1)  # 32x8x8

    x = g.op("AveragePool", x, kernel_shape=[2, 2], strides=[2, 2])  # 32x4x4
    x = g.op("Flatten", g.op("GlobalAveragePool", x), axis=1)
    g.op("Gemm", x, g.weight(10, 32, fan_in=32), g.const(g.randn(10, scale=0.1)), transB=1, out="logits")
    return g.build({"input": (1, 3, 32, 32)}, {"logits": (1, 10)}, cnn_small.__doc__)


def cnn_dynamic() -> onnx.ModelProto:
    """Fully convolutional CNN with symbolic H/W input: conv, depthwise, BN, residual, per-channel Mul/Add constants."""
    g = Graph("cnn_dynamic", seed=2)
    r = g.op("Relu", g.conv("input", 3, 8))
    x = g.conv(r, 8, 8, group=8)  # depthwise
    x = g.bn(g.conv(x, 8, 8, bias=False), 8)
    x = g.op("Relu", g.op("Add", x, r))  # residual
    # Both broadcast forms of a per-channel constant: (C,1,1) and (1,C,1,1).
    x = g.op("Mul", x, g.const(g.rng.uniform(0.5, 1.5, (8, 1, 1))))
    x = g.op("Add", x, g.const(g.randn(1, 8, 1, 1, scale=0.1)))
    x = g.op("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("Flatten", g.op("GlobalAveragePool", x), axis=1)
    g.op("Gemm", x, g.weight(5, 8, fan_in=8), g.const(g.randn(5, scale=0.1)), transB=1, out="logits")
    return g.build({"input": (1, 3, "H", "W")}, {"logits": (1, 5)}, cnn_dynamic.__doc__)


def _inverted_residual(g, x, cin, cexp, cout, stride):
    """MobileNetV2 block: 1x1 expand, depthwise 3x3, 1x1 project (BN after each, ReLU6 after
    the first two); the residual Add where shapes allow."""
    relu6 = lambda t: g.op("Clip", t, g.const(0.0), g.const(6.0))  # noqa: E731
    h = relu6(g.bn(g.conv(x, cin, cexp, k=1, bias=False), cexp))
    h = relu6(g.bn(g.conv(h, cexp, cexp, stride=stride, group=cexp, bias=False), cexp))
    h = g.bn(g.conv(h, cexp, cout, k=1, bias=False), cout)
    return g.op("Add", h, x) if stride == 1 and cin == cout else h


def cnn_mobile() -> onnx.ModelProto:
    """MobileNetV2-style CNN at 224x224, a realistic deployment shape: strided stem, five inverted residual blocks, GAP, Gemm."""
    g = Graph("cnn_mobile", seed=5)
    x = g.op("Clip", g.bn(g.conv("input", 3, 16, stride=2, bias=False), 16), g.const(0.0), g.const(6.0))
    for cin, cexp, cout, stride in ((16, 64, 24, 2), (24, 96, 24, 1), (24, 96, 32, 2), (32, 128, 32, 1),
                                    (32, 128, 64, 2)):            # 112 -> 56 -> 56 -> 28 -> 28 -> 14
        x = _inverted_residual(g, x, cin, cexp, cout, stride)
    x = g.op("Flatten", g.op("GlobalAveragePool", x), axis=1)
    g.op("Gemm", x, g.weight(10, 64, fan_in=64), g.const(g.randn(10, scale=0.1)), transB=1, out="logits")
    return g.build({"input": (1, 3, 224, 224)}, {"logits": (1, 10)}, cnn_mobile.__doc__)


def transformer_small() -> onnx.ModelProto:
    """One pre-LN transformer encoder block: LayerNorm, 4-head attention via Reshape/Transpose/MatMul/Softmax, Erf-GELU FFN."""
    T, C, H = 16, 32, 4
    D = C // H
    g = Graph("transformer_small", seed=3)
    heads = g.const([1, T, H, D], dtype=np.int64)
    merged = g.const([1, T, C], dtype=np.int64)

    h = g.layer_norm("tokens", C)
    q, k, v = (g.op("Reshape", g.linear(h, C, C), heads) for _ in "qkv")  # (1,T,H,D)
    q = g.op("Transpose", q, perm=[0, 2, 1, 3])  # (1,H,T,D)
    kt = g.op("Transpose", k, perm=[0, 2, 3, 1])  # (1,H,D,T)
    v = g.op("Transpose", v, perm=[0, 2, 1, 3])
    att = g.op("Mul", g.op("MatMul", q, kt), g.const(1 / np.sqrt(D)))
    att = g.op("MatMul", g.op("Softmax", att, axis=-1), v)  # (1,H,T,D)
    att = g.op("Reshape", g.op("Transpose", att, perm=[0, 2, 1, 3]), merged)
    x = g.op("Add", "tokens", g.linear(att, C, C))

    # FFN with GELU spelled out as x * 0.5 * (1 + erf(x / sqrt(2))), as exporters emit it.
    f = g.linear(g.layer_norm(x, C), C, 2 * C)
    erf = g.op("Erf", g.op("Div", f, g.const(np.sqrt(2.0))))
    f = g.op("Mul", g.op("Mul", f, g.op("Add", erf, g.const(1.0))), g.const(0.5))
    g.op("Add", x, g.linear(f, 2 * C, C), out="features")
    return g.build({"tokens": (1, T, C)}, {"features": (1, T, C)}, transformer_small.__doc__)


def bcast_demo() -> onnx.ModelProto:
    """Elementwise ops with lower-rank constants where ncnn's outer-axis alignment differs from numpy's trailing alignment."""
    g = Graph("bcast_demo", seed=4)
    # x: C=4,H=6,W=4 (W == C); seq: T=8, C=8 (T == C) -- so wrong alignment still "fits" shape-wise.
    y = g.op("Add", "x", g.const(g.randn(4)))  # per-W, not per-channel
    y = g.op("Mul", y, g.const(g.rng.uniform(0.5, 1.5, (6, 4))))  # (H,W), not (C,H)
    y = g.op("Max", y, g.const(g.randn(1, 1, 4, scale=0.5)))
    g.op("Sub", g.const(g.randn(4)), y, out="out_image")  # constant on the left
    s = g.op("Sub", "seq", g.const(g.randn(8)))  # per-feature, not per-row
    g.op("Div", s, g.const(g.rng.uniform(0.5, 2.0, (1, 8))), out="out_seq")
    return g.build({"x": (1, 4, 6, 4), "seq": (1, 8, 8)},
                   {"out_image": (1, 4, 6, 4), "out_seq": (1, 8, 8)}, bcast_demo.__doc__)


def audio_1d() -> onnx.ModelProto:
    """1-D audio-style stack: Conv1d (strided, depthwise, grouped dilated), MaxPool1d, ConvTranspose1d,
    AvgPool1d, Softplus; pnnx writes it as Convolution1D, ConvolutionDepthWise1D, Pooling1D, Deconvolution1D."""
    g = Graph("audio_1d", seed=5)

    def conv1d(x, cin, cout, k, group=1, **attrs):
        return g.op("Conv", x, g.weight(cout, cin // group, k, fan_in=cin // group * k),
                    g.const(g.randn(cout, scale=0.1)), kernel_shape=[k], group=group, **attrs)

    x = g.op("Relu", conv1d("wave", 4, 8, 5, strides=[2], pads=[2, 2]))
    x = conv1d(x, 8, 8, 3, group=8, pads=[1, 1])
    x = g.op("MaxPool", x, kernel_shape=[3], strides=[2], pads=[1, 1])
    x = g.op("ConvTranspose", x, g.weight(8, 6, 4, fan_in=8 * 4), g.const(g.randn(6, scale=0.1)),
             kernel_shape=[4], strides=[2], pads=[1, 1])
    x = g.op("AveragePool", x, kernel_shape=[2], strides=[2])
    g.op("Softplus", conv1d(x, 6, 6, 3, group=2, dilations=[2]), out="features")
    return g.build({"wave": (1, 4, 64)}, {"features": (1, 6, 12)}, audio_1d.__doc__)


MODELS = {f.__name__: f for f in (cnn_small, cnn_dynamic, cnn_mobile, transformer_small, bcast_demo, audio_1d)}

# Concrete sizes for symbolic input dims when running a model under --check.
CHECK_DIMS = {"cnn_dynamic": [{"H": 16, "W": 16}, {"H": 24, "W": 20}, {"H": 32, "W": 40}]}


def check(name) -> list:
    """Validate models/<name>.onnx; returns a list of problems (empty == OK)."""
    import onnxruntime as ort

    path = MODELS_DIR / f"{name}.onnx"
    data = path.read_bytes()
    problems = []
    if data != MODELS[name]().SerializeToString():
        problems.append("file is stale: differs from what the script builds")
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    if (model.ir_version, model.opset_import[0].version) != (IR_VERSION, OPSET):
        problems.append("wrong ir_version/opset")

    # Every intermediate tensor must get a type with a known rank (and full dims when the input is static).
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph
    known = {v.name: v.type.tensor_type for v in [*inferred.value_info, *inferred.output]}
    static = name not in CHECK_DIMS
    for node in model.graph.node:
        for out in node.output:
            t = known.get(out)
            if t is None or not t.HasField("shape"):
                problems.append(f"no inferred shape for {out}")
            elif static and not all(d.HasField("dim_value") for d in t.shape.dim):
                problems.append(f"partially unknown shape for {out}")

    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for dims in CHECK_DIMS.get(name, [{}]):
        feed = {i.name: rng.standard_normal([dims.get(d, d) for d in i.shape]).astype(np.float32)
                for i in sess.get_inputs()}
        outs = sess.run(None, feed)
        for o, val in zip(model.graph.output, outs):
            expected = tuple(d.dim_value for d in o.type.tensor_type.shape.dim)
            ok = val.shape == expected and np.isfinite(val).all()
            ins = ", ".join(f"{k}{v.shape}" for k, v in feed.items())
            print(f"  {ins} -> {o.name}{val.shape} std={val.std():.3f} {'ok' if ok else 'FAIL'}")
            if not ok:
                problems.append(f"{o.name}: shape {val.shape} (want {expected}) or non-finite values")
    print(f"  {path.stat().st_size} bytes, {len(model.graph.node)} nodes")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="validate models/*.onnx instead of writing them")
    args = parser.parse_args(argv)

    if not args.check:
        MODELS_DIR.mkdir(exist_ok=True)
        for name, build in MODELS.items():
            onnx.save(build(), MODELS_DIR / f"{name}.onnx")
            print(f"wrote models/{name}.onnx")
        return 0

    failed = False
    for name in MODELS:
        print(name)
        for p in check(name):
            print(f"  FAIL: {p}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

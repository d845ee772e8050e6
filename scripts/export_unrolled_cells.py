"""Export torch recurrences written as Python loops over LSTMCell / GRUCell / RNNCell (the export
unrolls them, one cell copy per step) into models/unrolled/, for passes/fuse_recurrent_cells.py.

    /work/zoo-venv/bin/python scripts/export_unrolled_cells.py [NAME ...]     (default: all)

Small on purpose (a few KB each): the tests run them in real ncnn against onnxruntime.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parent.parent / "models" / "unrolled"
STEPS, SIZE, HIDDEN = 6, 7, 5


class Bidirectional(torch.nn.Module):
    """captcha-whisperer's CRNN in small: a forward and a backward LSTMCell loop, zero states,
    outputs stacked and concatenated, plus the final states of the forward pass."""
    def __init__(self):
        super().__init__()
        self.fwd, self.bwd = torch.nn.LSTMCell(SIZE, HIDDEN), torch.nn.LSTMCell(SIZE, HIDDEN)

    def forward(self, x):                       # x [T, 1, SIZE]
        h = c = torch.zeros(x.shape[1], HIDDEN)
        ys = []
        for t in range(x.shape[0]):
            h, c = self.fwd(x[t], (h, c))
            ys.append(h)
        h_end, c_end = h, c
        h = c = torch.zeros(x.shape[1], HIDDEN)
        back = []
        for t in range(x.shape[0] - 1, -1, -1):
            h, c = self.bwd(x[t], (h, c))
            back.append(h)
        return torch.cat([torch.stack(ys), torch.stack(back[::-1])], dim=2), h_end, c_end


class GivenState(torch.nn.Module):
    """A GRUCell loop from an initial state fed by the caller; every step's state is also summed."""
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.GRUCell(SIZE, HIDDEN)

    def forward(self, x, h):                    # x [T, 1, SIZE], h [1, HIDDEN]
        total = torch.zeros_like(h)
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            total = total + h
        return h, total


class SquareRnn(torch.nn.Module):
    """An RNNCell loop whose input and hidden sizes are equal (which Gemm is recurrent is read from
    the wiring), over steps given as separate computed tensors."""
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.RNNCell(HIDDEN, HIDDEN)

    def forward(self, x):                       # x [1, T * HIDDEN]
        h = torch.zeros(1, HIDDEN)
        outs = []
        for t in range(STEPS):
            h = self.cell(torch.relu(x[:, t * HIDDEN:(t + 1) * HIDDEN]), h)
            outs.append(h)
        return torch.stack(outs)


class ReluRnn(torch.nn.Module):
    """An RNNCell loop with nonlinearity="relu": no ncnn layer computes it (ncnn's RNN is tanh), so
    the steps stay written out; their input products share W_ih (hoist_shared_projections)."""
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.RNNCell(WIDE, HIDDEN, nonlinearity="relu")

    def forward(self, x):                       # x [T, 1, WIDE]
        h = torch.zeros(1, HIDDEN)
        outs = []
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            outs.append(h)
        return torch.stack(outs)


WIDE = 256      # W_ih 5 x 256 floats: 5 KB, over the 4 KB below which a weight is not hoisted


def main(names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cases = {"lstm_bidirectional": (Bidirectional(), (torch.randn(STEPS, 1, SIZE),), ["x"]),
             "gru_given_state": (GivenState(), (torch.randn(STEPS, 1, SIZE), torch.randn(1, HIDDEN)), ["x", "h"]),
             "rnn_square": (SquareRnn(), (torch.randn(1, STEPS * HIDDEN),), ["x"]),
             "rnn_relu": (ReluRnn(), (torch.randn(STEPS, 1, WIDE),), ["x"])}
    for name, (module, args, inputs) in cases.items():
        if names and name not in names:
            continue
        path = OUT / f"{name}.onnx"
        torch.onnx.export(module.eval(), args, str(path), input_names=inputs, opset_version=17, dynamo=False)
        print(f"{path}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])

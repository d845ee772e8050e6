"""Where a converted model first leaves its reference: the layer, its ONNX node and the error."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Divergence:
    backend: str
    layer: str
    layer_type: str
    onnx_node: str | None
    blob: str | None
    max_abs: float | None = None
    max_rel: float | None = None
    error: str | None = None

    def describe(self) -> str:
        where = f"{self.layer_type} layer '{self.layer}' (ONNX node '{self.onnx_node}')"
        if self.error:
            return f"{self.backend}: {where} failed: {self.error}"
        return (f"{self.backend}: first divergence at {where}, blob '{self.blob}': "
                f"max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}")

"""Verification: the converted model against onnxruntime, per output and per layer, its report, and the inputs it feeds."""

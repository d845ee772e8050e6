"""onnx2ncnn: ONNX -> ncnn conversion that computes numpy's broadcasts in ncnn, and proves it."""
from .api import NcnnModel, convert
from .ir import ConversionError

__all__ = ["ConversionError", "NcnnModel", "convert"]

"""onnx2ncnn: ONNX -> ncnn conversion that computes numpy's broadcasts in ncnn, and proves it."""
from .api import NcnnModel, convert, load_ncnn
from .ir import ConversionError
from .verify import VerifyReport, verify

__all__ = ["ConversionError", "NcnnModel", "VerifyReport", "convert", "load_ncnn", "verify"]

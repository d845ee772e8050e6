"""onnx2ncnn: ONNX -> ncnn conversion that computes numpy's broadcasts in ncnn, and proves it.

The public names load on first use: importing a submodule (converter.ir, used by
passes/) must not pull in the API, which itself runs the passes.
"""
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

_PUBLIC = {"ConversionError": "ir", "NcnnModel": "api", "convert": "api", "load_ncnn": "api",
           "VerifyReport": "verification.check", "verify": "verification.check"}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name == "__version__":       # the installed distribution's, as `onnx2ncnn --version` prints it
        try:
            return version("onnx2ncnn")
        except PackageNotFoundError:        # a source tree that was never installed
            return "unknown (not installed)"
    if name not in _PUBLIC:
        raise AttributeError(f"module 'converter' has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_PUBLIC[name]}"), name)

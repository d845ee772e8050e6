"""Kernel modules, one per ncnn layer type or a few closely related ones, named after them;
importing them all fills the KERNELS table."""
import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")

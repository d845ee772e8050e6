"""Kernel modules, grouped by family; importing them fills the KERNELS table."""
from . import activation, activation_extra, binary, conv, lrn_prelu, matmul, norm, pooling, resize, shape, spatial_extra  # noqa: F401
from . import attention  # noqa: F401
from . import recurrent  # noqa: F401
from . import transformer  # noqa: F401

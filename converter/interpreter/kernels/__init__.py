"""Kernel modules, grouped by family; importing them fills the KERNELS table."""
from . import activation, binary, conv, matmul, norm, pooling, resize, shape  # noqa: F401
from . import attention  # noqa: F401
from . import recurrent  # noqa: F401
from . import activation_extra, tile_flip  # noqa: F401
from . import deconv, groupnorm, lrn, prelu, rearrange  # noqa: F401
from . import transformer  # noqa: F401
from . import cumulativesum  # noqa: F401
from . import squeeze  # noqa: F401
from . import cast  # noqa: F401
from . import gridsample  # noqa: F401
from . import fold  # noqa: F401
from . import einsum  # noqa: F401
from . import conv1d, pooling1d  # noqa: F401
from . import elementwise_extra  # noqa: F401
from . import diag, per_channel  # noqa: F401
from . import conv3d, pooling3d  # noqa: F401
from . import spectrogram  # noqa: F401

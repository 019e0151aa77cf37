"""corejax: JAX's programming model (grad, vmap, jit, a key-based PRNG) on a core of its own,
compiled to Numba kernels."""
__version__ = "0.1.0"

from corejax.config import config
from corejax import dtypes, tree_util
from corejax.array import (Array, Device, devices, device_put, device_get,
                           block_until_ready)
from corejax import lax
from corejax import numpy
from corejax.api import (jit, grad, value_and_grad, vjp, jvp, linearize, jacfwd, jacrev,
                         jacobian, hessian, vmap, make_jaxpr, eval_shape, ShapeDtypeStruct,
                         disable_jit)
from corejax.custom_derivatives import custom_jvp, custom_vjp
from corejax.errors import (ConcretizationTypeError, TracerBoolConversionError,
                            TracerIntegerConversionError, TracerArrayConversionError,
                            UnexpectedTracerError)
from corejax.tree_util import tree_map, tree_leaves, tree_structure
from corejax import nn, scipy, random
from corejax import debug

stop_gradient = lax.stop_gradient
float0 = dtypes.float0


def default_backend() -> str:
    return config.platform


def local_devices(backend=None):
    return devices(backend)


def device_count(backend=None) -> int:
    return len(devices(backend))

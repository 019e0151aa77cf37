"""Compiled float32 kernels of the special functions that lax/_special_host.py otherwise
evaluates with SciPy on the host: Ei and E1 (fastmath_expint), Si and Ci (fastmath_sici),
Dawson's integral (fastmath_dawsn).

A host primitive's eager impl (which a jit program also runs, as a host step) calls
`evaluate(name, x)` on float32 operands: one vectorized loop, computed in float64 and rounded
once, as accurate as SciPy's float64 value rounded to float32 (<= 0.51 ulp; the modules give
the bounds) and 30x faster; other dtypes keep SciPy. The loop is the flat kernel eager
evaluation builds for elementwise primitives (eager_kernels.load_flat: a generated module,
cached on disk), so it splits over the free cores as they do (`call_split`, parts claimed in
compiled code); a part's elements are computed as the whole array's are."""
import functools

import numpy as np

from corejax.compiler import eager_kernels
from corejax.compiler.fastmath_dawsn import dawsn_f32
from corejax.compiler.fastmath_expint import exp1_f32, expi_f32
from corejax.compiler.fastmath_sici import ci_f32, si_f32

# host primitive name -> its float32 function
FUNCTIONS = {"expi": expi_f32, "exp1": exp1_f32, "sici_si": si_f32, "sici_ci": ci_f32,
             "dawsn": dawsn_f32}


@functools.lru_cache(maxsize=None)
def _kernel(name: str) -> eager_kernels.FlatKernel:
    from numba import types
    from corejax.compiler import diskcache
    fn = FUNCTIONS[name]
    source = "\n".join([
        "from numba import njit", f"from {fn.__module__} import {fn.__name__}", "", "",
        '@njit(error_model="numpy", nogil=True, cache=True)',
        "def kernel(n0, a0, o0):",
        "    for i0 in range(n0):",
        f"        o0[i0] = {fn.__name__}(a0[i0])",
    ]) + "\n"
    array = diskcache.numba_type(np.float32)
    return eager_kernels.load_flat(source, [types.int64, array, array])


def evaluate(name: str, x: np.ndarray) -> np.ndarray:
    """FUNCTIONS[name] over the float32 array x."""
    out = np.empty(x.shape, np.float32)
    flat = np.ascontiguousarray(x).reshape(-1)
    eager_kernels.call_split(_kernel(name), flat.size, [flat], None, [out.reshape(-1)])
    return out

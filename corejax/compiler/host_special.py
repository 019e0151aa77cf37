"""Compiled float32 loops of the special functions that lax/_special_host.py otherwise
evaluates with SciPy on the host: Ei and E1 (fastmath_expint), Si and Ci (fastmath_sici),
Dawson's integral (fastmath_dawsn).

A host primitive's eager impl (which a jit program also runs, as a host step) calls `LOOPS[name]`
on float32 operands: one vectorized pass, computed in float64 and rounded once, as accurate as
SciPy's float64 value rounded to float32 (<= 0.51 ulp; the modules give the bounds) and 30x
faster; other dtypes keep SciPy. The loops release the GIL, so the impl runs parts of a large
array on the free cores (eager_kernels.call_host_split); a part's elements are computed as the
whole array's are."""
from numba import njit

from corejax.compiler.fastmath_dawsn import dawsn_f32
from corejax.compiler.fastmath_expint import exp1_f32, expi_f32
from corejax.compiler.fastmath_sici import ci_f32, si_f32

_loop = njit(cache=True, nogil=True, error_model="numpy")


@_loop
def _expi(x, out):
    for i in range(x.size):
        out[i] = expi_f32(x[i])


@_loop
def _exp1(x, out):
    for i in range(x.size):
        out[i] = exp1_f32(x[i])


@_loop
def _si(x, out):
    for i in range(x.size):
        out[i] = si_f32(x[i])


@_loop
def _ci(x, out):
    for i in range(x.size):
        out[i] = ci_f32(x[i])


@_loop
def _dawsn(x, out):
    for i in range(x.size):
        out[i] = dawsn_f32(x[i])


# host primitive name -> its float32 loop(x, out) over flat float32 arrays
LOOPS = {"expi": _expi, "exp1": _exp1, "sici_si": _si, "sici_ci": _ci, "dawsn": _dawsn}

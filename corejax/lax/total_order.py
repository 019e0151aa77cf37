"""Comparisons in IEEE 754's total order (eq_to, le_to, lt_to: the comparisons JAX's sort
comparator binds), and the integer keys that realise it:
-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, every bit pattern distinct. Integers and
booleans compare as usual."""
from __future__ import annotations

import numpy as np

from corejax.transforms.ad import defjvp_zero
from corejax.lax._factories import naryop, bool_result

__all__ = ["total_order_key", "eq_to_p", "le_to_p", "lt_to_p"]

_SIGNED = {2: np.int16, 4: np.int32, 8: np.int64}


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered as `x` is in the total order (x itself unless it is float)."""
    if x.dtype.kind != "f":
        return x
    bits = np.ascontiguousarray(x).view(_SIGNED[x.dtype.itemsize])
    # negative floats' magnitudes grow with their bits: flipping them reverses that order
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


_ORDERED = ("bool", "integer", "floating")


def _compare(name, np_compare):
    prim = naryop(name, lambda x, y: np_compare(total_order_key(x), total_order_key(y)),
                  (_ORDERED, _ORDERED), result_dtype=bool_result)
    defjvp_zero(prim)
    return prim


eq_to_p = _compare("eq_to", np.equal)
le_to_p = _compare("le_to", np.less_equal)
lt_to_p = _compare("lt_to", np.less)

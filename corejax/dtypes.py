"""Dtypes: canonicalization (x64 off by default), weak types and JAX's promotion lattice.

A Python scalar is *weakly typed*: it takes the dtype of whatever array it meets
(`x_f16 + 1.0` stays float16). Promotion is the least upper bound on a lattice:

    bool -> i* -> u8 -> u16 -> u32 -> u64 -> f*
            i* -> i8 -> i16 -> i32 -> i64 -> f*
            u8 -> i16, u16 -> i32, u32 -> i64
            f* -> f16 -> f32 -> f64 -> c128 ;  f* -> c* -> c64 -> c128 ;  f32 -> c64

where i*, f*, c* are the weak int, float and complex types.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from corejax.config import config

__all__ = [
    "float0", "canonicalize_dtype", "dtype", "result_type", "promote_types", "is_weakly_typed",
    "issubdtype", "iinfo", "finfo", "default_float_dtype", "default_int_dtype",
    "python_scalar_dtype", "is_float", "is_integer", "is_inexact", "is_complex",
    "TypePromotionError", "real_dtype", "complex_dtype",
]

# The dtype of tangents/cotangents of integer and boolean values, as in JAX.
float0 = np.dtype([("float0", np.void, 0)])

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

class _ScalarType:
    """jnp.float32 and friends: usable as a dtype, and callable to make a scalar array."""

    def __init__(self, np_type):
        self.type = np_type
        self.dtype = np.dtype(np_type)
        self.__name__ = self.dtype.name

    def __call__(self, x):
        from corejax.numpy import asarray
        return asarray(x, self.dtype)

    def __eq__(self, other):
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"<class 'corejax.numpy.{self.dtype.name}'>"


def scalar_type(np_type) -> _ScalarType:
    return _ScalarType(np_type)


_SUPPORTED = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, float32, float64, complex64, complex128}

_X32_CANONICAL = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


class _X64:
    enabled = bool(config.enable_x64)


config.watch("enable_x64", lambda v: setattr(_X64, "enabled", bool(v)))


class _Strict:
    """jax_numpy_dtype_promotion='strict': no implicit promotion between different dtypes."""
    enabled = config.numpy_dtype_promotion == "strict"


config.watch("numpy_dtype_promotion", lambda v: setattr(_Strict, "enabled", v == "strict"))


class TypePromotionError(ValueError):
    """An implicit dtype promotion that jax_numpy_dtype_promotion='strict' does not allow."""


def canonicalize_dtype(dt) -> np.dtype:
    """The dtype arrays of `dt` actually get: 64-bit types narrow to 32 bits while x64 is off."""
    if not isinstance(dt, np.dtype):
        dt = dtype(dt)
    if _X64.enabled:
        return dt
    return _X32_CANONICAL.get(dt, dt)


@functools.lru_cache(maxsize=256)
def _np_dtype(dt) -> np.dtype:
    try:
        out = np.dtype(dt)
    except TypeError:
        raise TypeError(f"Cannot interpret {dt!r} as a data type.") from None
    if out not in _SUPPORTED and out != float0:
        raise TypeError(f"Data type {out} is not supported by corejax.")
    return out


def dtype(x) -> np.dtype:
    """The (uncanonicalized) numpy dtype of a dtype-like or of a value."""
    if x is int:
        return int64
    if x is float:
        return float64
    if x is complex:
        return complex128
    if x is bool:
        return bool_
    if hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)):
        return x.dtype
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return float64
    if isinstance(x, complex):
        return complex128
    try:
        return _np_dtype(x)
    except TypeError:
        raise TypeError(f"Cannot determine dtype of {x!r}.") from None


def check_user_dtype_supported(dt, fun_name: str | None = None) -> None:
    """Warns, as JAX does, when a dtype the user asked for (`dtype=` of a jnp or random
    function) is narrowed to 32 bits because jax_enable_x64 is off. Python's own scalar types
    (float, int, complex) stand for the default dtypes and never warn."""
    if dt is None or _X64.enabled or any(dt is t for t in (int, float, complex, bool)):
        return
    try:
        requested = dtype(dt)
    except TypeError:
        return  # the function's own dtype check names a bad dtype
    narrowed = _X32_CANONICAL.get(requested)
    if narrowed is None:
        return
    where = f" requested in {fun_name}" if fun_name else ""
    warnings.warn(f"Explicitly requested dtype {requested.name}{where} is not available, and "
                  f"will be truncated to dtype {narrowed.name}. To enable more dtypes, set the "
                  "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
                  "variable.", UserWarning, stacklevel=3)


def default_float_dtype() -> np.dtype:
    return float64 if _X64.enabled else float32


def default_int_dtype() -> np.dtype:
    return int64 if _X64.enabled else int32


def default_complex_dtype() -> np.dtype:
    return complex128 if _X64.enabled else complex64


def python_scalar_dtype(x) -> np.dtype:
    """The canonical dtype of a weakly typed Python scalar."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int_dtype()
    if isinstance(x, float):
        return default_float_dtype()
    if isinstance(x, complex):
        return default_complex_dtype()
    raise TypeError(f"{x!r} is not a Python scalar.")


def is_weakly_typed(x) -> bool:
    if type(x) in (int, float, complex):
        return True
    return bool(getattr(x, "weak_type", False))


def is_float(dt) -> bool:
    return np.dtype(dt).kind == "f"


def is_integer(dt) -> bool:
    return np.dtype(dt).kind in "iu"


def is_inexact(dt) -> bool:
    return np.dtype(dt).kind in "fc"


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def real_dtype(dt) -> np.dtype:
    """The dtype of a complex dtype's parts (complex64 -> float32); other dtypes unchanged."""
    dt = np.dtype(dt)
    if dt.kind != "c":
        return dt
    return np.dtype(np.float32 if dt == np.complex64 else np.float64)


def complex_dtype(dt) -> np.dtype:
    """The complex dtype with parts of dtype `dt` (float64 -> complex128; narrower floats and
    integers -> complex64, or the canonical complex dtype while x64 is off)."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    return canonicalize_dtype(np.complex128 if dt == np.float64 else np.complex64)


def issubdtype(a, b) -> bool:
    if b is float0 or a is float0:
        return np.dtype(a) == np.dtype(b)
    return np.issubdtype(a, b)


iinfo = np.iinfo
finfo = np.finfo

# --- the promotion lattice -------------------------------------------------------------------

_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"

_LATTICE_UP = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [_WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [float16, _WEAK_COMPLEX],
    float16: [float32], float32: [float64, complex64], float64: [complex128],
    _WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
}


def _compute_upper_bounds():
    bounds = {}

    def up(node):
        if node not in bounds:
            acc = {node}
            for parent in _LATTICE_UP[node]:
                acc |= up(parent)
            bounds[node] = frozenset(acc)
        return bounds[node]

    for node in _LATTICE_UP:
        up(node)
    return bounds


_UPPER_BOUNDS = _compute_upper_bounds()


def _lattice_node(dt: np.dtype, weak: bool):
    if not weak:
        return dt
    kind = dt.kind
    if kind == "b":
        return bool_
    return {"i": _WEAK_INT, "u": _WEAK_INT, "f": _WEAK_FLOAT, "c": _WEAK_COMPLEX}[kind]


@functools.lru_cache(maxsize=4096)
def _join(nodes: tuple):
    common = frozenset.intersection(*(_UPPER_BOUNDS[n] for n in nodes))
    # The least upper bound is the common bound whose own upper bounds contain all the others.
    for candidate in common:
        if _UPPER_BOUNDS[candidate] >= common:
            return candidate
    raise TypeError(f"No common type for {nodes}.")  # unreachable: the lattice has a top


def _node_to_dtype(node) -> tuple[np.dtype, bool]:
    if node == _WEAK_INT:
        return default_int_dtype(), True
    if node == _WEAK_FLOAT:
        return default_float_dtype(), True
    if node == _WEAK_COMPLEX:
        return default_complex_dtype(), True
    return canonicalize_dtype(node), False


def _dtype_and_weakness(x) -> tuple[np.dtype, bool]:
    if type(x) in (int, float, complex):
        return python_scalar_dtype(x), True
    if isinstance(x, bool):
        return bool_, True
    if isinstance(x, (np.dtype, type, str, _ScalarType)):
        return dtype(x), False
    dt = dtype(x)
    return dt, is_weakly_typed(x)


_promotion_cache: dict = {}


def _promotion_key(x):
    t = type(x)
    if t in (int, float, complex, bool):
        return t
    dt = getattr(x, "dtype", None)
    if isinstance(dt, np.dtype) and not isinstance(x, (np.dtype, type)):
        return (dt, bool(getattr(x, "weak_type", False)))
    return None


def result_type_and_weakness(*args) -> tuple[np.dtype, bool]:
    """The promoted (canonical) dtype of `args` and whether the result is weakly typed."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    key = tuple(map(_promotion_key, args))
    if None not in key:
        key = (key, _X64.enabled, _Strict.enabled)
        hit = _promotion_cache.get(key)
        if hit is None:
            hit = _promotion_cache[key] = _result_type_and_weakness(args)
        return hit
    return _result_type_and_weakness(args)


# Under strict promotion a Python scalar may still join a dtype of a kind it fits: an int
# any number, a float any inexact dtype, a complex any complex dtype.
_STRICT_WEAK_FITS = {"i": "iufc", "f": "fc", "c": "c"}


def _strict_check(args, described) -> None:
    # a Python bool is a (strong) bool here: JAX has no weakly typed bool
    described = [(dt, weak and dt.kind != "b") for dt, weak in described]
    strong = {dt for dt, weak in described if not weak}
    weak_kinds = {("i" if dt.kind in "iu" else dt.kind) for dt, weak in described if weak}
    ok = len(strong) <= 1
    if ok and strong:
        (d,) = strong
        ok = all(d.kind in _STRICT_WEAK_FITS.get(k, "") for k in weak_kinds)
    if not ok:
        names = ", ".join(repr(str(type(a))) if type(a) in (int, float, complex) else
                          repr(dt.name) for a, (dt, _) in zip(args, described))
        raise TypePromotionError(
            f"Input dtypes ({names}) have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard.")


def _result_type_and_weakness(args) -> tuple[np.dtype, bool]:
    described = [_dtype_and_weakness(a) for a in args]
    if _Strict.enabled and len(args) > 1:
        _strict_check(args, described)
    nodes = tuple(_lattice_node(*d) for d in described)
    if len(nodes) == 1:
        return _node_to_dtype(nodes[0])
    return _node_to_dtype(_join(nodes))


def result_type(*args) -> np.dtype:
    """JAX's `jnp.result_type`: the canonical dtype `args` promote to."""
    return result_type_and_weakness(*args)[0]


def promote_types(a, b) -> np.dtype:
    """The promoted dtype of two dtypes (never weak), canonicalized."""
    if _Strict.enabled:
        _strict_check((a, b), [(dtype(a), False), (dtype(b), False)])
    return _node_to_dtype(_join((dtype(a), dtype(b))))[0]

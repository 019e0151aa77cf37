"""Dtypes: canonicalization (x64 off by default), weak types and JAX's promotion lattice.

A Python scalar is *weakly typed*: it takes the dtype of whatever array it meets
(`x_f16 + 1.0` stays float16). Promotion is the least upper bound on a lattice:

    bool -> i* -> u8 -> u16 -> u32 -> u64 -> f*
            i* -> i8 -> i16 -> i32 -> i64 -> f*
            u8 -> i16, u16 -> i32, u32 -> i64
            f* -> f16 -> f32 -> f64 -> c128 ;  f* -> c* -> c64 -> c128 ;  f32 -> c64
            f* -> bf16 -> f32
            f* -> each float8 / float6 / float4 type (and nothing above it)
            i* -> each of int1, int2, int4, uint1, uint2, uint4 (and nothing above it)

where i*, f*, c* are the weak int, float and complex types. The narrow types (bfloat16, the
float8/6/4 and 1/2/4-bit integer types) are ml_dtypes' NumPy extension types, as in JAX: their
numpy kind is "V", so code asks `is_float` / `is_integer` / `kind_of` here instead of `.kind`.
Two narrow types of different kinds, or a float8/6/4 or an int1/2/4 with any other strong type,
have no common type: promotion raises TypePromotionError, as JAX's does.
"""
from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from corejax.config import config

__all__ = [
    "float0", "canonicalize_dtype", "dtype", "result_type", "promote_types", "is_weakly_typed",
    "issubdtype", "iinfo", "finfo", "default_float_dtype", "default_int_dtype",
    "python_scalar_dtype", "is_float", "is_integer", "is_inexact", "is_complex",
    "TypePromotionError", "real_dtype", "complex_dtype", "bfloat16", "itemsize_bits",
    "kind_of", "is_narrow",
]

# The dtype of tangents/cotangents of integer and boolean values, as in JAX.
float0 = np.dtype([("float0", np.void, 0)])

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# ml_dtypes' extension types, by their JAX names (jnp.bfloat16, jnp.float8_e4m3fn, jnp.int4 ...)
FLOAT8_NAMES = ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
FLOAT6_NAMES = ("float6_e2m3fn", "float6_e3m2fn")
FLOAT4_NAMES = ("float4_e2m1fn",)
INTN_NAMES = ("int1", "int2", "int4", "uint1", "uint2", "uint4")
ML_NAMES = ("bfloat16",) + FLOAT4_NAMES + FLOAT6_NAMES + FLOAT8_NAMES + INTN_NAMES
_ML = {name: np.dtype(getattr(ml_dtypes, name)) for name in ML_NAMES}
bfloat16 = _ML["bfloat16"]
_FLOAT8 = frozenset(_ML[n] for n in FLOAT8_NAMES)
_FLOAT6 = frozenset(_ML[n] for n in FLOAT6_NAMES)
_FLOAT4 = frozenset(_ML[n] for n in FLOAT4_NAMES)
_SMALL_FLOATS = _FLOAT8 | _FLOAT6 | _FLOAT4          # no implicit promotion at all
_INTN = frozenset(_ML[n] for n in INTN_NAMES)         # likewise
# the numpy-style kind of every ml_dtypes type (their own .kind is "V")
_ML_KIND = {**{dt: "f" for dt in _SMALL_FLOATS | {bfloat16}},
            **{_ML[n]: ("u" if n.startswith("u") else "i") for n in INTN_NAMES}}


def kind_of(dt) -> str:
    """dt's NumPy kind character ("b", "i", "u", "f", "c", ...), with ml_dtypes' floats as
    "f" and its narrow integers as "i" / "u" (NumPy itself reports "V" for them)."""
    dt = np.dtype(dt)
    return _ML_KIND.get(dt, dt.kind)


def is_narrow(dt) -> bool:
    """Whether dt is one of ml_dtypes' types (bfloat16, float8/6/4, int1/2/4, uint1/2/4):
    NumPy computes with them through ml_dtypes' own loops, Numba not at all."""
    return np.dtype(dt) in _ML_KIND


def itemsize_bits(dt) -> int:
    """Bits per element (int4: 4, where its NumPy itemsize is a whole byte), as JAX's."""
    if dt is None:
        raise ValueError("dtype cannot be None.")
    dt = np.dtype(dt)
    kind = kind_of(dt)
    if kind == "b":
        return 8
    if kind in "iu":
        return int(ml_dtypes.iinfo(dt).bits)
    if kind == "f":
        return int(ml_dtypes.finfo(dt).bits)
    if kind == "c":
        return 2 * int(np.finfo(dt).bits)
    raise ValueError(f"unexpected input: dtype={dt!r}")

class _ScalarType:
    """jnp.float32 and friends: usable as a dtype, and callable to make a scalar array."""

    def __init__(self, np_type):
        self.type = np_type
        self.dtype = np.dtype(np_type)
        self.__name__ = self.__qualname__ = self.dtype.name

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
              float16, float32, float64, complex64, complex128, *_ML.values()}

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
    return kind_of(dt) == "f"


def is_integer(dt) -> bool:
    return kind_of(dt) in "iu"


def is_inexact(dt) -> bool:
    return kind_of(dt) in "fc"


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


# JAX's to_inexact_dtype maps int4 / uint4 to float32 and leaves the 1- and 2-bit integers as
# they are (so jnp.true_divide of two int2 arrays is an int2 quotient, as JAX's)
_NARROW_TO_INEXACT = {_ML["int4"]: float32, _ML["uint4"]: float32,
                      **{_ML[n]: _ML[n] for n in ("int1", "int2", "uint1", "uint2")}}


def to_inexact_dtype(dt) -> np.dtype:
    """The dtype functions defined on inexact values compute an integer or bool dtype in."""
    dt = np.dtype(dt)
    if is_inexact(dt):
        return dt
    return _NARROW_TO_INEXACT.get(dt) or default_float_dtype()


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


_ML_SCALAR_KIND = {dt.type: kind for dt, kind in _ML_KIND.items()}
# the abstract NumPy scalar types each kind of ml_dtypes type belongs under
_ML_PARENTS = {"f": (np.floating, np.inexact, np.number, np.generic),
               "i": (np.signedinteger, np.integer, np.number, np.generic),
               "u": (np.unsignedinteger, np.integer, np.number, np.generic)}


def _scalar_type_of(x):
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    return np.dtype(x).type


def issubdtype(a, b) -> bool:
    """np.issubdtype, with ml_dtypes' types placed in NumPy's hierarchy as JAX places them
    (bfloat16 under np.floating, int4 under np.signedinteger, uint4 under np.unsignedinteger)."""
    if b is float0 or a is float0:
        return np.dtype(a) == np.dtype(b)
    a_type, b_type = _scalar_type_of(a), _scalar_type_of(b)
    kind = _ML_SCALAR_KIND.get(a_type)
    if kind is not None:
        return b_type is a_type or b_type in _ML_PARENTS[kind]
    return bool(np.issubdtype(a_type, b_type))


# ml_dtypes' finfo / iinfo: NumPy's for NumPy's types, theirs for bfloat16, float8, int4 ...
iinfo = ml_dtypes.iinfo
finfo = ml_dtypes.finfo

# --- the promotion lattice -------------------------------------------------------------------

_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"

_LATTICE_UP = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8, *sorted(_INTN, key=str)],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [_WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [*sorted(_SMALL_FLOATS, key=str), bfloat16, float16, _WEAK_COMPLEX],
    float16: [float32], bfloat16: [float32], float32: [float64, complex64],
    float64: [complex128],
    **{t: [] for t in _SMALL_FLOATS | _INTN},
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
    kind = kind_of(dt)
    if kind == "b":
        return bool_
    return {"i": _WEAK_INT, "u": _WEAK_INT, "f": _WEAK_FLOAT, "c": _WEAK_COMPLEX}[kind]


def _node_name(node) -> str:
    return {_WEAK_INT: str(int), _WEAK_FLOAT: str(float), _WEAK_COMPLEX: str(complex)}.get(
        node, str(node))


@functools.lru_cache(maxsize=4096)
def _join(nodes: tuple):
    common = frozenset.intersection(*(_UPPER_BOUNDS[n] for n in nodes))
    # The least upper bound is the common bound whose own upper bounds contain all the others.
    for candidate in common:
        if _UPPER_BOUNDS[candidate] >= common:
            return candidate
    # only the narrow types' dead ends leave a set of types without a common upper bound
    names = tuple(_node_name(n) for n in nodes)
    if any(n in _FLOAT8 for n in nodes):
        what, example = "8-bit floats", "float32"
    elif any(n in _FLOAT6 for n in nodes):
        what, example = "6-bit floats", "float32"
    elif any(n in _FLOAT4 for n in nodes):
        what, example = "4-bit floats", "float32"
    else:
        what, example = "1-bit, 2-bit and 4-bit integers", "int32"
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
        f"unintended promotion, {what} do not support implicit promotion. If you'd like your "
        f"inputs to be promoted to another type, you can do so explicitly using e.g. "
        f"x.astype('{example}')")


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
    weak_kinds = {("i" if kind_of(dt) in "iu" else kind_of(dt)) for dt, weak in described
                  if weak}
    ok = len(strong) <= 1
    if ok and strong:
        (d,) = strong
        ok = all(kind_of(d) in _STRICT_WEAK_FITS.get(k, "") for k in weak_kinds)
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

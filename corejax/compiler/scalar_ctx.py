"""The `ctx` that elementwise lowering rules write scalar Numba expressions with.

A rule is `rule(ctx, *operand_exprs, **params) -> str`. Before each call the code generator
sets `ctx.in_dtypes` / `ctx.out_dtype` to the equation's operand and result dtypes; the rule
names math functions through `ctx.math(name, *args)`, and `ctx.select`, `ctx.cast`,
`ctx.bitcast`. Vectorizable float32/float64 functions come from compiler/fastmath.py where its
table has one, the lax-specific integer and rounding semantics from compiler/kernel_lib.py,
everything else from `math.*` / `np.*` scalars that Numba compiles.
"""
from __future__ import annotations

import numpy as np

from corejax.compiler import fastmath, kernel_lib

__all__ = ["ScalarCtx", "literal"]


def literal(value, dtype: np.dtype) -> str:
    """A Numba expression for a typed scalar constant."""
    dt = np.dtype(dtype)
    v = np.asarray(value).astype(dt).item()
    if dt == np.bool_:
        return "True" if v else "False"
    if dt.kind == "f":
        if v != v:
            body = "np.nan"
        elif v in (float("inf"), float("-inf")):
            body = "np.inf" if v > 0 else "-np.inf"
        else:
            body = repr(float(v))
        return f"np.{dt.name}({body})"
    if dt.kind == "c":
        return f"np.{dt.name}({complex(v)!r})"
    return f"np.{dt.name}({int(v)})"


# name -> math.* / np.* function for every float dtype (used where fastmath has no entry).
_LIBM = {
    "exp": "math.exp", "exp2": "np.exp2", "log": "math.log", "log1p": "math.log1p",
    "expm1": "math.expm1", "tanh": "math.tanh", "sin": "math.sin", "cos": "math.cos",
    "tan": "math.tan", "asin": "math.asin", "acos": "math.acos", "atan": "math.atan",
    "sinh": "math.sinh", "cosh": "math.cosh", "asinh": "math.asinh", "acosh": "math.acosh",
    "atanh": "math.atanh", "sqrt": "math.sqrt", "cbrt": "np.cbrt", "erf": "math.erf",
    "erfc": "math.erfc", "lgamma": "math.lgamma", "floor": "np.floor", "ceil": "np.ceil",
    "atan2": "math.atan2", "nextafter": "np.nextafter", "log2": "math.log2",
    "log10": "math.log10",
}


class ScalarCtx:
    backend = "cpu"

    def __init__(self):
        self.in_dtypes: list[np.dtype] = []
        self.out_dtype: np.dtype = np.dtype(np.float32)
        self.imports: set[str] = set()      # source lines the kernel module needs

    # --- helpers for rules ---------------------------------------------------------------

    def _dt(self) -> np.dtype:
        return self.in_dtypes[0] if self.in_dtypes else self.out_dtype

    def _lib(self, name: str) -> str:
        self.imports.add(kernel_lib.import_line(name))
        return name

    def const(self, value, dtype=None) -> str:
        return literal(value, self._dt() if dtype is None else dtype)

    def call(self, helper: str, *args) -> str:
        """A call to the backend's compiled helper `helper` (kernel_lib on the CPU, a device
        function of cuda_kernels on CUDA); it may return a tuple."""
        return f"{self._lib(helper)}({', '.join(args)})"

    def fast(self, name: str, *args):
        """A call of fastmath's vectorizable function for `name` on this equation's float
        dtype, or None where fastmath has none (a primitive's rule then emits its own code)."""
        dt = self._dt()
        fast = fastmath.lookup(name, dt) if dt.kind == "f" else None
        if fast is None:
            return None
        self.imports.add(fastmath.import_line(fast))
        return f"{fast.__name__}({', '.join(args)})"

    def math(self, name: str, *args) -> str:
        fast = self.fast(name, *args)
        if fast is not None:
            return fast
        dt = self._dt()
        handler = getattr(self, f"_m_{name}", None)
        if handler is not None:
            return handler(dt, *args)
        if name in _LIBM:
            return f"np.{dt.name}({_LIBM[name]}({', '.join(args)}))"
        raise NotImplementedError(f"no scalar lowering for math function {name!r}")

    def select(self, which: str, *cases: str) -> str:
        if len(cases) == 1:
            return cases[0]
        if self.in_dtypes and self.in_dtypes[0] == np.bool_:
            return f"({cases[1]} if {which} else {cases[0]})"
        expr = cases[-1]
        for i in range(len(cases) - 2, -1, -1):
            expr = f"({cases[i]} if {which} == {i} else {expr})"
        return expr

    def cast(self, x: str, new_dtype) -> str:
        src, dst = self._dt(), np.dtype(new_dtype)
        if src == dst:
            return x
        if dst == np.bool_:
            return f"({x} != 0)"
        if src.kind == "f" and dst.kind in "iu":
            info = np.iinfo(dst)
            return f"np.{dst.name}({self._lib('float_to_int')}({x}, {info.min}, {info.max}))"
        if src.kind == "c" and dst.kind != "c":
            x = f"({x}).real"
        return f"np.{dst.name}({x})"

    def bitcast(self, x: str, new_dtype) -> str:
        dst = np.dtype(new_dtype)
        if dst == self._dt():
            return x
        return f"{self._lib('bitcast')}({x}, np.{dst.name})"

    # --- math functions with dtype-specific forms ------------------------------------------

    def _m_abs(self, dt, x):
        return f"abs({x})" if dt.kind != "u" else x

    def _m_sign(self, dt, x):
        if dt.kind == "u":
            return f"np.{dt.name}({x} != 0)"
        one, minus_one = literal(1, dt), literal(-1, dt)
        # NaN and +-0 compare false both ways and come back unchanged, as in np.sign.
        return f"({one} if {x} > 0 else ({minus_one} if {x} < 0 else {x}))"

    def _m_rsqrt(self, dt, x):
        return f"(np.{dt.name}(1.0) / np.{dt.name}(math.sqrt({x})))"

    def _m_logistic(self, dt, x):
        one = literal(1, dt)
        return f"({one} / ({one} + np.{dt.name}(math.exp(-{x}))))"

    def _m_round_even(self, dt, x):
        return f"np.{dt.name}({self._lib('round_even')}({x}))"

    def _m_round_away(self, dt, x):
        return f"np.{dt.name}({self._lib('round_away')}({x}))"

    def _m_isfinite(self, dt, x):
        return f"np.isfinite({x})"

    def _m_fma(self, dt, a, b, c):
        return f"{self._lib('fma')}({a}, {b}, {c})"

    def _m_erf_inv(self, dt, x):
        return f"np.{dt.name}({self._lib('erf_inv')}({x}))"

    def _m_nextafter(self, dt, x, y):
        if dt in (np.dtype(np.float32), np.dtype(np.float64)):
            return f"{self._lib('nextafter_f' + str(dt.itemsize * 8))}({x}, {y})"
        return f"np.{dt.name}({_LIBM['nextafter']}({x}, {y}))"

    def _m_max(self, dt, x, y):
        if dt.kind in "fc":
            out = f"{self._lib('fmax')}({x}, {y})"
            if self._zeros(dt):
                # XLA orders -0 below +0 (max(-0, 0) is 0 whichever comes first), as eager does
                return f"(({x} + {y}) if {x} == 0 and {y} == 0 else {out})"
            return out
        return f"max({x}, {y})"

    def _m_min(self, dt, x, y):
        if dt.kind in "fc":
            out = f"{self._lib('fmin')}({x}, {y})"
            if self._zeros(dt):
                return f"(-((-{x}) + (-{y})) if {x} == 0 and {y} == 0 else {out})"
            return out
        return f"min({x}, {y})"

    def _zeros(self, dt) -> bool:
        """Whether max / min order signed zeros here (real floats on the CPU)."""
        return dt.kind == "f" and self.backend == "cpu"

    def _m_div(self, dt, x, y):
        if dt.kind in "fc":
            return f"({x} / {y})"
        on_zero = literal(-1 if dt.kind == "i" else np.iinfo(dt).max, dt)
        if dt.itemsize <= 4:
            return f"({on_zero} if {y} == 0 else np.{dt.name}({_quotient(x, y)}))"
        if dt.kind == "u":
            # floor division is truncation here; kept free of signed constants (Numba computes
            # uint64 with int64 in float64)
            return f"({on_zero} if {y} == 0 else np.{dt.name}({x} // {y}))"
        return f"np.{dt.name}({self._lib('int_div')}({x}, {y}, {on_zero}))"

    def _m_rem(self, dt, x, y):
        if dt == np.float32 and self.backend == "cpu":
            return f"{self._lib('fmod_f32')}({x}, {y})"
        if dt == np.float64 and self.backend == "cpu":
            # a NaN x is kept (quieted), as np.fmod keeps it; libm's fmod returns y's NaN
            return f"(({x} + {x}) if {x} != {x} else np.float64(np.fmod({x}, {y})))"
        if dt.kind in "fc":
            return f"np.{dt.name}(np.fmod({x}, {y}))"
        if dt.itemsize <= 4:
            return (f"({x} if {y} == 0 else "
                    f"np.{dt.name}(np.int64({x}) - {_quotient(x, y)} * np.int64({y})))")
        return f"np.{dt.name}({self._lib('int_rem')}({x}, {y}))"

    def _m_pow(self, dt, x, y):
        return f"np.{dt.name}(np.power({x}, {y}))"

    def _m_integer_pow(self, dt, x, n):
        n = int(n)
        if n == 0:
            return literal(1, dt)
        if 0 < n <= 4:
            return _squarings(x, n)
        if -4 <= n < 0 and dt.kind not in "iu":
            return f"({literal(1, dt)} / {_squarings(x, -n)})"
        return f"np.{dt.name}({self._lib('integer_pow')}({x}, {n}, {literal(1, dt)}))"

    def _m_not(self, dt, x):
        return f"(not {x})" if dt == np.bool_ else f"(~{x})"

    def _m_popcount(self, dt, x):
        return f"np.{dt.name}({self._lib('popcount')}({x}, {dt.itemsize * 8}))"

    def _m_shift_left(self, dt, x, y):
        return f"np.{dt.name}({self._lib('shift_left')}({x}, {y}, {dt.itemsize * 8}))"

    def _m_shift_right_arithmetic(self, dt, x, y):
        if dt.kind == "u":
            sx = f"np.int{dt.itemsize * 8}({x})"
            return (f"np.{dt.name}({self._lib('shift_right_arith')}({sx}, {y}, "
                    f"{dt.itemsize * 8}))")
        return f"np.{dt.name}({self._lib('shift_right_arith')}({x}, {y}, {dt.itemsize * 8}))"

    def _m_shift_right_logical(self, dt, x, y):
        bits = dt.itemsize * 8
        ux = f"np.uint{bits}({x})" if dt.kind == "i" else x
        return f"np.{dt.name}({self._lib('shift_right_logical')}({ux}, {y}, {bits}))"


def _quotient(x, y):
    """The quotient of integers of up to 32 bits rounded toward zero, as an int64: the float64
    quotient is exact enough that truncating it is exact (|x| < 2**53), and float division
    vectorizes where integer division does not (the eager kernels compute it so too)."""
    return f"np.int64(np.float64({x}) / np.float64({y}))"


def _squarings(x, n):
    """The expression x**n (n >= 1) by repeated squaring, multiplied in XLA's order (x**4 is
    ((x * x) * (x * x)), x**3 is (x * (x * x))) so that it rounds as JAX's does."""
    acc, base = None, x
    while n:
        if n & 1:
            acc = base if acc is None else f"({acc} * {base})"
        n >>= 1
        if n:
            base = f"({base} * {base})"
    return acc

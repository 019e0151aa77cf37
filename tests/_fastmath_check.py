"""What the fastmath tests share (tests/test_fastmath*.py): the inputs every float32 and float64
function is swept over, the compiled loop that applies a scalar function to an array, and the
ulp measure and checks. Accuracy is measured in ulps of the result's format against a reference
with more precision, over every 2**12-th float32 bit pattern (every 2**45-th float64 one),
twice: at offset 0, which hits +-0, +-inf, powers of two and the denormal boundary, and at an odd
offset; plus 300,000 random bit patterns."""
import numpy as np
from numba import njit


def _inputs(bits, stride_log2, n_random):
    """Every 2**stride_log2-th bit pattern, the same shifted by an odd offset, random patterns."""
    grid = np.arange(0, 2 ** bits, 2 ** stride_log2, dtype=np.uint64)
    rng = np.random.default_rng(0)
    random = rng.integers(0, 2 ** bits - 1, size=n_random, dtype=np.uint64, endpoint=True)
    pattern = np.concatenate([grid, grid + np.uint64(0x2A5), random])
    if bits == 32:
        return pattern.astype(np.uint32).view(np.float32)
    return pattern.view(np.float64)


X32 = _inputs(32, 12, 300_000)
X64 = _inputs(64, 45, 300_000)


def _elementwise(fn):
    @njit(error_model="numpy")
    def apply(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return apply


_applied = {}


def evaluate(fn, x):
    """fn over the array x in a compiled loop (fn's dtype: float64 for *_f64, else float32)."""
    if fn not in _applied:
        _applied[fn] = _elementwise(fn)
    out = np.empty(np.shape(x), fn_dtype(fn))
    _applied[fn](np.asarray(x, fn_dtype(fn)), out)
    return out


def _elementwise2(fn):
    @njit(error_model="numpy")
    def apply(x, y, out):
        for i in range(x.size):
            out[i] = fn(x[i], y[i])
    return apply


def evaluate2(fn, x, y):
    """The binary fn over the float32 arrays x and y (one shape) in a compiled loop."""
    if fn not in _applied:
        _applied[fn] = _elementwise2(fn)
    out = np.empty(np.shape(x), np.float32)
    _applied[fn](np.asarray(x, np.float32), np.asarray(y, np.float32), out)
    return out


def loop_llvm(fn, arity=1):
    """The LLVM IR of `evaluate`'s (arity 2: `evaluate2`'s) loop over fn, after one call."""
    x = np.linspace(1.5, 3, 64)
    evaluate(fn, x) if arity == 1 else evaluate2(fn, x, x)
    return "\n".join(_applied[fn].inspect_llvm().values())


def check_special_values(fn, x, want):
    """fn's loop gives exactly `want` at x (the sign of zero too; any nan where want is nan)."""
    got = evaluate(fn, x)
    for xi, gi, wi in zip(x, got, want):
        if np.isnan(wi):
            assert np.isnan(gi), (fn.__name__, xi, gi)
        else:
            assert gi == wi and np.signbit(gi) == np.signbit(wi), (fn.__name__, xi, gi, wi)
    return got


def fn_dtype(fn):
    return np.float64 if fn.__name__.endswith("_f64") else np.float32


def ulp_errors(y, ref, dtype=np.float32):
    """|y - ref| in ulps of the result format at ref. Overflow to inf counts as 2**emax*2, so a
    result of inf where ref is just below the overflow threshold costs a fraction of an ulp."""
    info = np.finfo(dtype)
    mant = info.nmant + 1
    top = np.ldexp(np.longdouble(1), info.maxexp)
    wide = np.float64 if dtype == np.float32 else np.longdouble    # exact enough, and faster
    top = top.astype(wide)
    yv = np.asarray(y, wide)
    yv = np.where(np.isinf(yv), np.sign(yv) * top, yv)
    # A reference past the format's range is inf once rounded: measure from 2**emax*2 too.
    refv = np.clip(np.asarray(ref, wide), -top, top)
    _, e = np.frexp(np.abs(refv))
    e = np.minimum(e, info.maxexp)
    ulp = np.ldexp(wide(1), np.maximum(e - mant, info.minexp - info.nmant))
    return np.abs(yv - refv) / ulp


def check_exact_values(fn, x, y, ref):
    """Asserts nan where ref is nan, and exactly ref (the sign of zero too) where ref is inf or
    0; returns the mask of the other elements."""
    ref = np.asarray(ref)
    nan_ref = np.isnan(ref)
    bad_nan = nan_ref != np.isnan(y)
    assert not bad_nan.any(), f"{fn.__name__}: nan mismatch at {x[bad_nan][:5]} -> {y[bad_nan][:5]}"
    exact = np.isinf(ref) | (ref == 0)
    bad = exact & ~nan_ref & ((y != ref) | (np.signbit(y) != np.signbit(ref)))
    assert not bad.any(), f"{fn.__name__}: at {x[bad][:5]} got {y[bad][:5]}, want {ref[bad][:5]}"
    return ~nan_ref & ~exact


def check_ulps(fn, x, y, ref, mask, bound):
    """Asserts the ulp bound over the elements of `mask`; returns the max."""
    ref = np.asarray(ref)
    err = ulp_errors(y[mask], ref[mask], fn_dtype(fn))
    worst = int(np.argmax(err))
    max_err = float(err[worst])
    assert max_err <= bound, (f"{fn.__name__}: {max_err:.3f} ulp > {bound} at x="
                              f"{x[mask][worst]!r}: got {y[mask][worst]!r}, "
                              f"want {ref[mask][worst]!r}")
    return max_err


def check_against(fn, x, ref, bound):
    """Asserts nan/inf/signed-zero agreement exactly and the ulp bound elsewhere; returns the max."""
    y = evaluate(fn, x)
    return check_ulps(fn, x, y, ref, check_exact_values(fn, x, y, ref), bound)

"""Numerical checks of derivatives, as jax.test_util: `check_jvp`, `check_vjp` and
`check_grads` compare automatic derivatives with central finite differences along one
random direction (a fixed seed, so a check is reproducible), raising AssertionError with
NumPy's report where they differ.

Tolerances default per dtype (the looser of the two compared arrays' dtypes): float16 1e-2,
float32 2e-3, float64 1e-5 (complex: 1e-3 and 1e-5). `atol` / `rtol` replace them: a number
for every dtype, or a dict `{dtype: tolerance}` for some.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from corejax import dtypes
from corejax.api import jvp, vjp
from corejax.core import get_aval
from corejax.tree_util import tree_leaves, tree_map, tree_structure

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

_GRADIENT_TOLERANCE = {
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _dtype(x) -> np.dtype:
    return np.dtype(get_aval(x).dtype)


def _inexact(x) -> bool:
    return dtypes.is_inexact(_dtype(x))


def _tolerance(dt: np.dtype, given) -> float:
    if given is None:
        return _GRADIENT_TOLERANCE.get(dt, 0.0)
    if isinstance(given, dict):
        return {np.dtype(k): v for k, v in given.items()}.get(dt, _tolerance(dt, None))
    return float(given)


def _check_close(actual, desired, atol, rtol, err_msg: str) -> None:
    if tree_structure(actual) != tree_structure(desired):
        raise AssertionError(f"{err_msg}: the trees differ in structure: "
                             f"{tree_structure(actual)} vs {tree_structure(desired)}.")
    for a, d in zip(tree_leaves(actual), tree_leaves(desired)):
        if not (_inexact(a) or _inexact(d)):
            continue          # integer outputs have float0 tangents: nothing to compare
        dts = [_dtype(a), _dtype(d)]
        np.testing.assert_allclose(
            np.asarray(a), np.asarray(d), err_msg=err_msg,
            atol=max(_tolerance(dt, atol) for dt in dts),
            rtol=max(_tolerance(dt, rtol) for dt in dts))


def _random_like(rng: np.random.RandomState, tree):
    """A random normal direction for each inexact leaf; float0 zeros for the others."""
    def leaf(x):
        aval = get_aval(x)
        if not dtypes.is_inexact(aval.dtype):
            return np.zeros(aval.shape, dtypes.float0)
        values = rng.standard_normal(aval.shape)
        if dtypes.is_complex(aval.dtype):
            values = values + 1j * rng.standard_normal(aval.shape)
        return np.asarray(values, aval.dtype)
    return tree_map(leaf, tree)


def _step(x, t, sign: float, eps: float):
    """`x + sign * eps * t` in x's dtype; integer leaves (float0 tangents) stay as they are."""
    if not _inexact(x):
        return x
    dt = _dtype(x)
    return np.asarray(np.asarray(x, dt) + np.asarray(sign * eps, dt) * t, dt)


def _numerical_jvp(f: Callable, primals: tuple, tangents: tuple, eps: float):
    """Central differences of `f` along `tangents`, computed in float64 from `f`'s outputs,
    each leaf cast back to its output's dtype."""
    plus = f(*tree_map(lambda x, t: _step(x, t, 1.0, eps), primals, tangents))
    minus = f(*tree_map(lambda x, t: _step(x, t, -1.0, eps), primals, tangents))

    def difference(p, m):
        if not _inexact(p):
            return np.zeros(np.shape(p), dtypes.float0)
        wide = np.complex128 if dtypes.is_complex(_dtype(p)) else np.float64
        diff = (np.asarray(p, wide) - np.asarray(m, wide)) * (0.5 / eps)
        return np.asarray(diff, _dtype(p))

    return tree_map(difference, plus, minus)


def _inner_product(xs, ys) -> np.ndarray:
    """The sum over leaves of <x, y>, in double precision."""
    total = np.float64(0.0)
    for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
        if _inexact(x) and _inexact(y):
            x, y = np.asarray(x), np.asarray(y)
            wide = np.result_type(x.dtype, y.dtype, np.float64)
            total = total + np.vdot(x.astype(wide).ravel(), y.astype(wide).ravel())
    return np.asarray(total)


def _tolerance_dtype(*trees) -> np.dtype:
    """The dtype whose tolerance governs an inner product of these trees: the loosest."""
    dts = [_dtype(x) for t in trees for x in tree_leaves(t) if _inexact(x)]
    if not dts:
        return np.dtype(np.float64)
    return max(dts, key=lambda dt: _GRADIENT_TOLERANCE.get(dt, 0.0))


def check_jvp(f: Callable, f_jvp: Callable, args, atol=None, rtol=None, eps: float = EPS,
              err_msg: str = "") -> None:
    """Checks `f_jvp(primals, tangents) -> (f(*primals), tangent_out)` (typically
    `functools.partial(corejax.jvp, f)`) against finite differences of `f` at `args`."""
    args = tuple(args)
    rng = np.random.RandomState(0)
    tangents = _random_like(rng, args)
    out, tangent_out = f_jvp(args, tangents)
    _check_close(out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    expected = _numerical_jvp(f, args, tangents, eps)
    _check_close(tangent_out, expected, atol, rtol,
                 f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args, atol=None, rtol=None, eps: float = EPS,
              err_msg: str = "") -> None:
    """Checks `f_vjp(*args) -> (f(*args), pullback)` (typically
    `functools.partial(corejax.vjp, f)`): the inner product of a random cotangent's pullback
    with a random tangent must equal that of the cotangent with the finite-difference
    derivative along the tangent."""
    args = tuple(args)
    rng = np.random.RandomState(0)
    out, pullback = f_vjp(*args)
    _check_close(out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    tangents = _random_like(rng, args)
    tangent_out = _numerical_jvp(f, args, tangents, eps)
    cotangent = _random_like(rng, out)
    cotangent_in = pullback(cotangent)
    dtype = _tolerance_dtype(args, out)
    got = _inner_product(tangents, cotangent_in)
    want = _inner_product(tangent_out, cotangent)
    msg = f"{err_msg} cotangent projection" if err_msg else "cotangent projection"
    np.testing.assert_allclose(got, want, err_msg=msg, atol=_tolerance(dtype, atol),
                               rtol=_tolerance(dtype, rtol))


def check_grads(f: Callable, args, order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol=None, rtol=None, eps: float | None = None) -> None:
    """Checks the derivatives of `f` at `args` up to `order` against finite differences:
    forward mode ("fwd": jvp, and jvps of jvps) and reverse mode ("rev": vjp, and vjps of
    the pullback as a function of the arguments and the cotangent)."""
    args = tuple(args)
    eps = EPS if eps is None else eps
    rng = np.random.RandomState(0)

    def check(fun, fun_args, n, what):
        if "fwd" in modes:
            label = f"JVP of {what}" if what else "JVP"
            check_jvp(fun, functools.partial(jvp, fun), fun_args, atol, rtol, eps, label)
            if n > 1:
                tangents = _random_like(rng, fun_args)
                check(lambda primals, tangents: jvp(fun, primals, tangents),
                      (fun_args, tangents), n - 1, label)
        if "rev" in modes:
            label = f"VJP of {what}" if what else "VJP"
            check_vjp(fun, functools.partial(vjp, fun), fun_args, atol, rtol, eps, label)
            if n > 1:
                cotangent = _random_like(rng, fun(*fun_args))

                def pulled_back(*args_and_cotangent):
                    *primals, ct = args_and_cotangent
                    return vjp(fun, *primals)[1](ct)

                check(pulled_back, fun_args + (cotangent,), n - 1, label)

    if order >= 1:
        check(f, args, order, "")

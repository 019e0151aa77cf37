"""Eager elementwise ops give the bits jit gives (as in JAX, where both run XLA's kernels).

Every elementwise primitive with a compiled lowering is evaluated eagerly and under jit on the
same float32 / float64 operands (random values over many scales, random bit patterns, and the
special values: +-0, +-inf, nan, denormals, the largest and smallest normals, overflow and
underflow thresholds) and the results are compared bit for bit (any nan matches any nan).
Then the eager path itself: Python scalars, 0-d arrays, strided, transposed and broadcast
operands, empty arrays, constants folded under jit. (Accuracy against JAX's own values is the
conformance suite's job: tests/conformance, which runs every case eagerly too.)
"""
import inspect
import subprocess
import sys

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax.array import Array
from corejax.compiler import eager_kernels, registry
from corejax.core import Primitive, ShapedArray
from corejax.lax import special as lax_special

# Elementwise lowerings that take no float operands, or need parameters that pick their
# dtypes: not part of the comparison.
NOT_FLOAT = {"and", "or", "xor", "not", "population_count", "shift_left",
             "shift_right_logical", "shift_right_arithmetic", "select_n", "threefry2x32",
             "convert_element_type", "bitcast_convert_type", "name"}
PARAMS = {"integer_pow": [dict(y=y) for y in (-7, -3, -2, -1, 0, 1, 2, 3, 4, 5, 9, 16)],
          "round": [dict(rounding_method=0), dict(rounding_method=1)]}
# Special functions (lax/special.py) iterate for a long time on huge arguments: moderate ones.
SPECIAL = {v for v in vars(lax_special).values() if isinstance(v, Primitive)}


def specials(dt):
    fi = np.finfo(dt)
    big = 88.72 if dt == np.float32 else 709.78
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, 10.0,
                     fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal,
                     fi.tiny / 3, fi.max, -fi.max, fi.eps, 1e-30, 1e30, big, -big, big + 1,
                     -big * 1.17, 0.9999, -0.9999, 1.0001], dt)


def operands(dt, n, rng, moderate):
    parts = [specials(dt)]
    if moderate:
        parts += [(rng.random(n) * 20 - 5).astype(dt), rng.random(n).astype(dt)]
    else:
        bits = rng.integers(0, 2 ** (8 * np.dtype(dt).itemsize), n, dtype=np.uint64)
        parts += [rng.standard_normal(n).astype(dt),
                  (rng.standard_normal(n) * 30).astype(dt),
                  (rng.random(n) * 2 - 1).astype(dt),
                  (np.exp(rng.uniform(-60, 60, n)) * rng.choice([-1, 1], n)).astype(dt),
                  bits.astype(np.dtype(f"u{np.dtype(dt).itemsize}")).view(dt)]
    return np.concatenate(parts)


def same_bits(a, b):
    """Bitwise equality, nan matching any nan."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    u = f"u{a.dtype.itemsize}"
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and
                np.array_equal(a.view(u)[~nan], b.view(u)[~nan]))


def arity_of(prim, dt, params):
    """The operand count: the lowering rule's, or where it takes *operands (and the abstract
    evaluation of n-ary primitives takes any number) the first count abstract eval accepts."""
    fixed = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
    found = inspect.signature(registry.elementwise_lowerings[prim]).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in found):
        counts = (1, 2, 3, 4)
    else:
        counts = (sum(p.kind in fixed and p.name not in params for p in found) - 1,)
    for n in counts:
        try:
            prim.abstract_eval(*[ShapedArray((3,), np.dtype(dt))] * n, **params)
            return n
        except TypeError:
            continue
    return None


def cases():
    out = []
    for prim in sorted(registry.elementwise_lowerings, key=lambda p: p.name):
        if prim.name in NOT_FLOAT:
            continue
        for params in PARAMS.get(prim.name, [{}]):
            label = prim.name + "".join(f"-{k}={v}" for k, v in params.items())
            out.append(pytest.param(prim, params, id=label))
    return out


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("prim,params", cases())
def test_eager_equals_jit_bitwise(prim, params, dt):
    arity = arity_of(prim, dt, params)
    assert arity is not None, f"{prim.name} takes no {np.dtype(dt).name} operands: list it"
    rng = np.random.default_rng(sum(map(ord, prim.name)))
    xs = operands(dt, 1200, rng, moderate=prim in SPECIAL)
    args = [Array(xs if i == 0 else rng.permutation(xs), False) for i in range(arity)]
    eager = prim.bind(*args, **params)
    jitted = jax.jit(lambda *a: prim.bind(*a, **params))(*args)
    if not same_bits(eager, jitted):
        e, j = np.asarray(eager), np.asarray(jitted)
        bad = np.flatnonzero(~((e == j) | (np.isnan(e) & np.isnan(j))) |
                             (np.signbit(e) != np.signbit(j)) & ~np.isnan(e))
        i = bad[0] if bad.size else 0
        pytest.fail(f"{prim.name}{params} {np.dtype(dt).name}: eager differs from jit on "
                    f"{bad.size} of {e.size} inputs, e.g. {[np.asarray(a)[i] for a in args]} "
                    f"-> eager {e[i]!r}, jit {j[i]!r}")


def test_every_transcendental_is_in_the_comparison():
    compared = {p.name for p in registry.elementwise_lowerings} - NOT_FLOAT
    assert eager_kernels.PRIMITIVES <= compared


FUNCTIONS = {
    "exp": jnp.exp, "tanh": jnp.tanh, "log1p": jnp.log1p, "sin": jnp.sin, "logistic": jax.nn.sigmoid,
    "erf_inv": jax.scipy.special.erfinv, "lgamma": jax.scipy.special.gammaln,
    "pow": jnp.power, "atan2": jnp.arctan2, "rsqrt": lax.rsqrt,
}
BINARY = {"pow", "atan2"}


def layouts(dt):
    rng = np.random.default_rng(7)
    m = (rng.standard_normal((6, 10)) * 3).astype(dt)
    n = (rng.random((6, 10)) * 4 - 2).astype(dt)
    pos = np.abs(m) + dt(0.25)
    return {
        "0-d": (jnp.asarray(pos[0, 0]), jnp.asarray(n[0, 0])),
        "strided": (jnp.asarray(pos)[:, ::3], jnp.asarray(n)[::-1, ::3]),
        "transposed": (jnp.asarray(pos).T, jnp.asarray(n).T),
        "broadcast": (jnp.asarray(pos[:, :1]), jnp.asarray(n[:1, :])),
        "empty": (jnp.zeros((0, 3), dt), jnp.zeros((0, 3), dt)),
    }


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("layout", ["0-d", "strided", "transposed", "broadcast", "empty"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_eager_layouts_equal_jit(name, layout, dt):
    fn = FUNCTIONS[name]
    x, y = layouts(dt)[layout]
    if name in BINARY:
        x, y = jnp.broadcast_arrays(x, y) if layout != "broadcast" else (x, y)
        eager, jitted = fn(x, y), jax.jit(fn)(x, y)
    else:
        eager, jitted = fn(x), jax.jit(fn)(x)
    assert eager.shape == jitted.shape and eager.dtype == jitted.dtype == dt
    assert eager.weak_type == jitted.weak_type
    assert same_bits(eager, jitted)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_python_scalars_and_folded_constants_equal_jit(name):
    fn = FUNCTIONS[name]
    args = (1.37, 0.61) if name in BINARY else (1.37,)
    eager = fn(*args)
    traced = jax.jit(fn)(*args)                          # scalars as arguments
    folded = jax.jit(lambda: fn(*args))()                # constants folded by the compiler
    assert eager.dtype == traced.dtype == folded.dtype
    assert eager.weak_type and traced.weak_type and folded.weak_type
    assert same_bits(eager, traced) and same_bits(eager, folded)


def test_float32_pow_of_yogis_bias_correction():
    # 0.999 ** 9 in float32: NumPy's pow (float64, rounded) is an ulp away from the kernel's;
    # it made Optax's Yogi trajectory differ eagerly.
    b2, t = jnp.float32(0.999), jnp.float32(9.0)
    assert same_bits(b2 ** t, jax.jit(lambda a, b: a ** b)(b2, t))


def test_integer_operands_stay_on_numpy():
    # no kernel for other dtypes: integer operands reach the primitive's own error
    with pytest.raises(TypeError, match="exp does not accept dtype int32"):
        lax.exp(jnp.arange(3, dtype=jnp.int32))


def test_import_does_not_load_numba_until_an_eager_transcendental():
    code = ("import sys, corejax.numpy as jnp\n"
            "x = jnp.ones(3) + 1.0\n"
            "print('numba' in sys.modules)\n"
            "jnp.exp(x)\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]

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
import time

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


# --- the compiled loops that replace slow NumPy impls on large operands ---------------------
# (eager_kernels.FAST): each must give its NumPy impl's bits exactly, NaN payloads and zeros'
# signs included, on random values, random bit patterns and every pair of special values.

def _fast(name, values, params=None):
    out = eager_kernels._fast_runner(name)(values, params or {})
    assert out is not None, f"{name}: no compiled loop for {[v.dtype for v in values]}"
    return out


def _exact(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))


def _float_pairs(dt, rng):
    """(x, y) of at least FAST_MIN_SIZE elements: every pair of special values (and NaNs with
    payloads, signaling ones too), then random values and random bit patterns."""
    u = np.dtype(f"u{np.dtype(dt).itemsize}")
    nans = (np.array([0x7f800001, 0xffc00001, 0x7fc00123, 0xffa00002], np.uint32).view(dt)
            if dt == np.float32 else
            np.array([0x7ff0000000000001, 0xfff8000000000001, 0x7ff8000000000123], np.uint64)
            .view(dt))
    sp = np.concatenate([specials(dt), nans, np.array([65504, 65519.99, 65520, 6.1e-5, 3e-8,
                                                       2.98e-8, 5.96e-8, -1e-7], dt)])
    a, b = (m.ravel() for m in np.meshgrid(sp, sp))
    n = eager_kernels.FAST_MIN_SIZE * 2
    x = np.resize(np.concatenate([a, operands(dt, n, rng, moderate=False)]), 3 * n)
    y = np.resize(np.concatenate([b, rng.permutation(operands(dt, n, rng, moderate=False))]),
                  3 * n)
    bits = rng.integers(0, 2 ** 63, n, dtype=np.int64).astype(u).view(dt)
    return np.concatenate([x, bits]), np.concatenate([y, rng.permutation(bits)])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_fast_float_loops_have_the_numpy_impls_bits(dt):
    rng = np.random.default_rng(3)
    x, y = _float_pairs(dt, rng)
    with np.errstate(all="ignore"):
        for prim in (lax.max_p, lax.min_p, lax.nextafter_p, lax.div_p):
            assert _exact(_fast(prim.name, [x, y]), prim.impl(x, y)), prim.name
        assert _exact(_fast("div", [np.broadcast_to(dt(1), x.shape), x]),
                      lax.div_p.impl(np.broadcast_to(dt(1), x.shape), x))
        assert _exact(_fast("sign", [x]), lax.sign_p.impl(x))
        for power in (-1, -2, 1, 2, 3, 5, -7, 12):
            assert _exact(_fast("integer_pow", [x], dict(y=power)),
                          lax.integer_pow_p.impl(x, y=power)), power
        assert _exact(_fast("sqrt", [x]), lax.sqrt_p.impl(x))
        assert _exact(_fast("round", [x], dict(rounding_method=0)),
                      lax.round_p.impl(x, rounding_method=0))
        halves = np.round(y * dt(64)) / dt(2)            # ties, +-0.5, +-1.5, ...
        assert _exact(_fast("round", [halves], dict(rounding_method=0)),
                      lax.round_p.impl(halves, rounding_method=0))
        for which in (x > y, np.asarray(True), np.broadcast_to(False, x.shape)):
            assert _exact(_fast("select_n", [which, x, y]), lax.select_n_p.impl(which, x, y))
        # broadcast scalar operands (lax's rank-0 operands become broadcast views)
        for s in (dt(0.5), dt(-0.0), dt(np.nan)):
            b = np.broadcast_to(s, x.shape)
            assert _exact(_fast("max", [x, b]), lax.max_p.impl(x, b))
            assert _exact(_fast("min", [b, x]), lax.min_p.impl(b, x))
        if dt == np.float32:
            assert _exact(_fast("rem", [x, y]), lax.rem_p.impl(x, y))
            big = x * dt(1e6)     # quotients past the float64 shortcut (reduced first)
            assert _exact(_fast("rem", [big, y]), lax.rem_p.impl(big, y))
            params = dict(new_dtype=np.dtype(np.float16), weak_type=False)
            for v in (x, y, x * dt(1e-4), x * dt(3e-7), x * dt(6e-8)):
                assert _exact(_fast("convert_element_type", [v], params),
                              lax.convert_element_type_p.impl(v, **params))


def test_float32_to_float16_loop_on_every_exponent_and_rounding_boundary():
    # all float32 bit patterns whose low 12 mantissa bits are 0x000, 0x7ff, 0x800, 0x801, 0xfff
    # or random, for every sign, exponent and high-mantissa value (NumPy's conversion is the
    # reference): every rounding case of every binade, subnormal results, overflow and NaNs
    rng = np.random.default_rng(5)
    hi = np.arange(1 << 20, dtype=np.uint64) << np.uint64(12)
    params = dict(new_dtype=np.dtype(np.float16), weak_type=False)
    for low in (0x000, 0x7ff, 0x800, 0x801, 0xfff, None):
        lo = rng.integers(0, 1 << 12, hi.size, dtype=np.uint64) if low is None else low
        x = (hi | np.uint64(low if low is not None else 0) | (lo if low is None else 0)
             ).astype(np.uint32).view(np.float32)
        with np.errstate(all="ignore"):
            assert _exact(_fast("convert_element_type", [x], params), x.astype(np.float16))


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "uint8", "uint16", "uint32"])
def test_fast_integer_division_loops_have_the_numpy_impls_bits(dt):
    rng = np.random.default_rng(4)
    info = np.iinfo(dt)
    n = eager_kernels.FAST_MIN_SIZE * 2
    x = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64)
    y = np.concatenate([rng.integers(info.min, int(info.max) + 1, n // 2, dtype=np.int64),
                        rng.integers(-9 if info.min else 0, 9, n - n // 2)])
    sp = np.array([info.min, info.min + 1, -1 if info.min else 2, 0, 1, 7, info.max - 1,
                   info.max], np.int64)
    a, b = np.meshgrid(sp, sp)
    x[:a.size], y[:b.size] = a.ravel(), b.ravel()
    x, y = x.astype(dt), y.astype(dt)
    with np.errstate(all="ignore"):
        for prim in (lax.div_p, lax.rem_p):
            assert _exact(_fast(prim.name, [x, y]), prim.impl(x, y)), prim.name
            seven = np.broadcast_to(np.asarray(7, dt), x.shape)
            assert _exact(_fast(prim.name, [x, seven]), prim.impl(x, seven)), prim.name
        assert _exact(_fast("select_n", [x > y, x, y]), lax.select_n_p.impl(x > y, x, y))
        assert _exact(_fast("sign", [x]), lax.sign_p.impl(x))


def test_fast_loops_leave_small_and_other_operands_to_numpy():
    run = eager_kernels._fast_runner("max")
    small = np.ones(eager_kernels.FAST_MIN_SIZE - 1, np.float32)
    assert run([small, small], {}) is None
    big = np.ones(eager_kernels.FAST_MIN_SIZE, np.float16)
    assert run([big, big], {}) is None                      # no float16 in Numba
    assert run([big.astype(np.float32), big.astype(np.float64)], {}) is None  # impl raises
    assert run([big.astype(np.float32), np.asarray(1, np.float32)], {}) is None
    with pytest.raises(TypeError, match="select_n cases must have the same shapes"):
        lax.select_n_p.bind(jnp.asarray(big > 0), jnp.asarray(big.astype(np.float32)),
                            jnp.asarray(np.float32(1)))
    # eager results through the primitive are the impl's on every layout
    x = np.random.default_rng(0).standard_normal((256, 130)).astype(np.float32)
    for a, b in ((x, x[::-1]), (x.T, x.T[::-1]), (x[:, :1] + 0 * x, x)):
        assert _exact(lax.max(jnp.asarray(a), jnp.asarray(b)), lax.max_p.impl(a, b))


# --- loops split over threads ------------------------------------------------------------------

@pytest.fixture
def split_everything(monkeypatch):
    """Every loop of 4096 elements or more split as if four cores were there and splitting
    paid, whatever the machine; at least one helper thread even on one core."""
    from corejax.compiler import eager_threads
    helpers = max(1, eager_kernels._helpers())
    monkeypatch.setattr(eager_kernels, "_helpers", lambda: helpers)
    monkeypatch.setattr(eager_kernels, "split_cores", lambda key, n: 4 if n >= 4096 else 1)
    monkeypatch.setattr(eager_threads, "WAKE_SECONDS", 0.0)    # (short jobs wake them too)
    return helpers


def test_parts_cut_at_multiples_of_64_and_cover_the_range():
    for n in (1 << 13, 5000 * 8, 1 << 17, 1_000_003):
        for cores in (2, 3, 4):
            b = eager_kernels.parts(n, cores)
            assert b[0] == 0 and b[-1] == n and b == sorted(b) and len(b) > 2
            assert all(x % 64 == 0 for x in b[1:-1])
    assert eager_kernels.parts(1 << 20, 1) == [0, 1 << 20]


def test_loops_split_when_long_and_splitting_has_paid(monkeypatch):
    from corejax.compiler import eager_threads
    monkeypatch.setattr(eager_kernels, "_timings", {})
    monkeypatch.setattr(eager_threads, "helpers_awake", lambda: True)
    monkeypatch.setattr(eager_kernels, "_helpers", lambda: 3)
    n = 1 << 20
    assert eager_kernels.split_cores("k", n) == 1              # never timed
    eager_kernels.timed("k", n, 1, lambda: None)               # a fast loop
    assert eager_kernels.split_cores("k", n) == 1
    eager_kernels._timings["k"] = [1e-9, None, 0, 1, 0]         # slow, but timed once only
    assert eager_kernels.split_cores("k", n) == 1
    eager_kernels._timings["k"] = [1e-9, None, 0, 2, 0]         # 1 ms predicted
    assert eager_kernels.split_cores("k", n) == 4               # not split 3 times yet: try
    eager_kernels._timings["k"] = [1e-9, 2e-9, 0, 2, 2]
    assert eager_kernels.split_cores("k", n) == 4
    assert eager_kernels.split_cores("k", eager_kernels.SPLIT_MIN - 1) == 1
    eager_kernels._timings["k"] = [1e-9, 2e-9, 0, 2, 3]         # a busy machine: split slower
    choices = [eager_kernels.split_cores("k", n) for _ in range(2 * eager_kernels.EXPLORE)]
    assert choices.count(4) == 2 and choices.count(1) == 2 * eager_kernels.EXPLORE - 2
    eager_kernels._timings["k"] = [1e-9, 0.85e-9, 0, 2, 3]      # split hardly faster
    assert eager_kernels.split_cores("k", n) == 1
    eager_kernels._timings["k"] = [1e-9, 0.6e-9, 0, 2, 3]       # free cores: split faster
    choices = [eager_kernels.split_cores("k", n) for _ in range(2 * eager_kernels.EXPLORE)]
    assert choices.count(1) == 2
    # the times count from each way's second call on, the fastest of three, then a moving
    # average, a preempted call counting at most twice the average
    eager_kernels._timings["k"] = [1e-9, None, 0, 4, 0]
    eager_kernels.timed("k", n, 4, lambda: time.sleep(0.01))   # (a first split: threads start)
    eager_kernels.timed("k", n, 4, lambda: None)
    fast = eager_kernels._timings["k"][1]
    assert fast < 1e-9
    eager_kernels.timed("k", n, 4, lambda: time.sleep(0.01))
    assert eager_kernels._timings["k"][1] == fast
    eager_kernels.timed("k", n, 1, lambda: time.sleep(0.05))
    assert eager_kernels._timings["k"][0] == pytest.approx(0.75e-9 + 0.25 * 2e-9)
    # a split call that had to wake the helpers is not a split's time
    monkeypatch.setattr(eager_threads, "helpers_awake", lambda: False)
    eager_kernels.timed("k", n, 4, lambda: time.sleep(0.01))
    assert eager_kernels._timings["k"][1] == fast


def test_run_parts_runs_every_part_once_and_reraises(split_everything):
    seen = []
    eager_kernels.run_parts(lambda lo, hi: seen.append((lo, hi)), [0, 3, 5, 9, 12])
    assert sorted(seen) == [(0, 3), (3, 5), (5, 9), (9, 12)]

    def fail(lo, hi):
        if lo == 5:
            raise ValueError("part 5")
    with pytest.raises(ValueError, match="part 5"):
        eager_kernels.run_parts(fail, [0, 3, 5, 9, 12])


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sinh", "pow", "atan2"])
def test_split_kernels_give_the_unsplit_bits(split_everything, name):
    rng = np.random.default_rng(7)
    n = 5_001
    x = operands(np.float32, n, rng, moderate=False)
    y = rng.permutation(operands(np.float32, n, rng, moderate=False))
    prim = getattr(lax, f"{name}_p")
    args = [x, y] if name in ("pow", "atan2") else [x]
    split = eager_kernels.evaluate(prim, args, {})
    with eager_kernels_unsplit():
        whole = eager_kernels.evaluate(prim, args, {})
    assert _exact(split, whole)
    # FAST loops too, a broadcast scalar operand included
    b = np.broadcast_to(np.float32(0.5), x.shape)
    assert _exact(_fast("max", [x, b]), lax.max_p.impl(x, b))
    assert _exact(_fast("select_n", [x > y, x, y]), lax.select_n_p.impl(x > y, x, y))



def test_special_functions_run_split_kernels_with_their_impls_bits(split_everything):
    """lax/special.py's primitives ask for eager kernels through their lowering rules
    (`eager_kernel`): long eager loops of them run compiled and split, with the bits of their
    impl (the same float64 scalar code on one thread, rounded once)."""
    marked = {p.name: p for p, rule in registry.elementwise_lowerings.items()
              if getattr(rule, "eager_kernel", False)}
    assert {"igamma", "igammac", "zeta", "ndtri", "digamma",
            "regularized_incomplete_beta"} <= set(marked)
    rng = np.random.default_rng(11)
    n = 5_001
    for dt in (np.float32, np.float64):
        a = (rng.random(n) * 5 + 0.1).astype(dt)
        x = (rng.random(n) * 8).astype(dt)
        cases = [("igamma", [a, x]), ("igammac", [a, x]), ("zeta", [a + dt(1.5), x + dt(0.1)])]
        if dt is np.float64:        # (float32 ndtri runs fastmath's kernel, not the impl's)
            cases.append(("ndtri", [(x / 8).astype(dt)]))
        for name, args in cases:
            split = eager_kernels.evaluate(marked[name], args, {})
            assert split is not None, name
            assert _exact(split, marked[name].impl(*args)), (name, dt)

def test_helper_threads_under_concurrent_callers():
    """Two Python threads splitting loops at once, many times: every part runs exactly once,
    and each call returns only after its parts are done."""
    import threading
    from corejax.compiler import eager_threads
    errors = []

    def caller(seed):
        rng = np.random.default_rng(seed)
        for _ in range(300):
            k = int(rng.integers(2, 9))
            bounds = list(range(k + 1))
            runs = [0] * k

            def task(lo, hi):
                if rng.random() < 0.1:
                    time.sleep(1e-4)
                runs[lo] += 1
            eager_threads.run_parts(task, bounds, 2)
            if runs != [1] * k:
                errors.append(runs)

    threads = [threading.Thread(target=caller, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


class eager_kernels_unsplit:
    def __enter__(self):
        self.saved = eager_kernels.split_cores
        eager_kernels.split_cores = lambda key, n: 1

    def __exit__(self, *exc):
        eager_kernels.split_cores = self.saved


# --- NumPy's pairwise sum, compiled (compiler/eager_sums.py) ---------------------------------

def _sum_cases(dt, rng):
    for n in [*range(1, 300), 511, 512, 513, 1000, 1023, 1024, 1025, 4097, 8191, 8192, 8193,
              9000, 16383, 16384, 16385, 65537, 100_003]:
        scale = rng.choice([1.0, 1e3, 1e-3, 1e30], n)
        yield (rng.standard_normal(n) * scale).astype(dt)
    yield np.full(300, -0.0, dt)                     # NumPy's sum of -0.0s is +0.0
    yield np.array([1e30, 1.0, -1e30] * 400, dt)    # cancellation: the order shows
    yield np.array([np.inf, -np.inf] * 200, dt)
    yield np.array([1.0] * 199 + [np.nan] + [2.0] * 100, dt)
    yield np.full(1 << 20, 0.1, dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_pairwise_sum_has_numpys_bits_on_any_number_of_threads(dt, split_everything):
    from corejax.compiler import eager_sums
    rng = np.random.default_rng(11)
    for a in _sum_cases(dt, rng):
        with np.errstate(all="ignore"):
            want = np.add.reduce(a)
        for parts in (1, 2, 3, 4):
            got = eager_sums.pairwise_sum(a, parts, eager_kernels.run_parts)
            assert type(got) is type(want) and _exact(got, want), (a.size, parts, got, want)


def test_eager_sums_run_the_compiled_pairwise_sum(split_everything):
    from corejax.compiler import eager_sums
    rng = np.random.default_rng(12)
    real = eager_sums.pairwise_sum
    calls = []
    try:
        eager_sums.pairwise_sum = lambda *a: calls.append(a[0].shape) or real(*a)
        for shape, axis, compiled in (((1 << 17,), None, True), ((300, 301), None, True),
                                      ((3, 70, 200), None, True), ((300, 301), (0, 1), True),
                                      ((400, 300), 1, False), ((300, 401), 0, False)):
            x = rng.standard_normal(shape).astype(np.float32)
            for a in ((x, x.T) if x.ndim > 1 else (x,)):    # transposed: NumPy's own path
                del calls[:]
                got = jnp.sum(jnp.asarray(a), axis=axis)
                assert _exact(got, np.sum(a, axis=axis)), (shape, axis)
                assert calls == ([(a.size,)] if compiled and a is x else []), (shape, axis)
                # mean is that sum times 1 / count
                count = a.size // np.asarray(got).size
                assert _exact(jnp.mean(jnp.asarray(a), axis=axis),
                              np.asarray(got) * np.float32(1 / count))
    finally:
        eager_sums.pairwise_sum = real


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_full_products_have_the_bits_of_jit(dt):
    """A float product over every axis of a large array runs jit's fused loop eagerly (its
    lanes reassociated: not NumPy's sequential chain), so eager and jit agree bit for bit, as
    in JAX; products over some axes keep the NumPy impl's bits."""
    rng = np.random.default_rng(11)
    for shape in [(1 << 20,), (100_003,), (eager_kernels.FAST_MIN_SIZE,), (512, 1024),
                  (3, 7, 4099)]:
        x = (1 + (rng.random(shape) - 0.5) * 1e-2).astype(dt)
        x.flat[::997] = -x.flat[::997]
        got = np.asarray(jnp.prod(jnp.asarray(x)))
        want = np.asarray(jax.jit(jnp.prod)(jnp.asarray(x)))
        assert got.dtype == dt and got.tobytes() == want.tobytes(), shape
        np.testing.assert_allclose(got, np.prod(x.astype(np.float64)), rtol=1e-4)
    x = (1 + (rng.random((512, 1024)) - 0.5) * 1e-2).astype(dt)
    assert _exact(np.asarray(jnp.prod(jnp.asarray(x), axis=1)), np.prod(x, axis=1))
    small = x[0, :100]
    assert _exact(np.asarray(jnp.prod(jnp.asarray(small))), np.prod(small))

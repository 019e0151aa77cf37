"""Eager fusion (corejax/numpy/_eager_fusion.py): a composed jnp function called eagerly on
large Arrays runs as one compiled program that gives what its op-by-op evaluation gives, bit
for bit (NaN payloads and zeros' signs included), with the same dtypes, weak types and errors;
traced calls (jit, make_jaxpr, grad, vmap) see the composition as before.

The tests lower MIN_SIZE to one element (fusion is a matter of size, not of semantics) and
compare each decorated function with itself evaluated op by op (MIN_SIZE out of reach), on
random values over many scales, random bit patterns and every pair of special values. A
signature's first call runs op by op and its later calls the program, so `fused` calls twice.
"""
import ml_dtypes
import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import corejax.scipy.special  # noqa: F401 (jax.scipy.special, for the sp.* cases)
from corejax import lax
from corejax.numpy import _eager_fusion

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16]
INTS = [np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8)]

# name -> (array operands, dtypes, static argument variants): every decorated function
CASES = {
    "hypot": (2, FLOATS, [{}]), "copysign": (2, FLOATS, [{}]),
    "logaddexp": (2, FLOATS, [{}]), "logaddexp2": (2, FLOATS, [{}]),
    "heaviside": (2, FLOATS, [{}]), "fmax": (2, FLOATS + INTS, [{}]),
    "fmin": (2, FLOATS + INTS, [{}]),
    "floor_divide": (2, FLOATS + INTS, [{}]), "remainder": (2, FLOATS + INTS, [{}]),
    "divmod": (2, FLOATS + INTS, [{}]),
    "logical_and": (2, FLOATS + INTS, [{}]), "logical_or": (2, FLOATS, [{}]),
    "logical_xor": (2, INTS, [{}]), "logical_not": (1, FLOATS + INTS, [{}]),
    "isclose": (2, FLOATS, [{}, {"rtol": 0.5, "atol": 1e-3, "equal_nan": True}]),
    "allclose": (2, FLOATS, [{}, {"equal_nan": True}]),
    "clip": (3, FLOATS + INTS, [{}]),
    "sinc": (1, FLOATS, [{}]), "trunc": (1, FLOATS + INTS, [{}]),
    "round": (1, FLOATS + INTS, [{}, {"decimals": 2}, {"decimals": -1}]),
    "isinf": (1, FLOATS + INTS, [{}]), "isfinite": (1, FLOATS + INTS, [{}]),
    "signbit": (1, FLOATS + INTS, [{}]),
    "nan_to_num": (1, FLOATS, [{}, {"nan": -0.0, "posinf": 7.0, "neginf": -1.5}]),
    "log2": (1, FLOATS + INTS, [{}]), "log10": (1, FLOATS, [{}]),
    "frexp": (1, FLOATS, [{}]), "modf": (1, FLOATS, [{}]), "spacing": (1, FLOATS, [{}]),
    "i0": (1, FLOATS, [{}]), "angle": (1, FLOATS, [{}, {"deg": True}]),
    "ldexp": (2, FLOATS, [{}]),
    "gcd": (2, INTS, [{}]), "lcm": (2, INTS, [{}]), "bitwise_count": (1, INTS, [{}]),
    # jax.nn's elementwise activations (their parameters static)
    "nn.relu6": (1, FLOATS, [{}]),
    "nn.soft_sign": (1, FLOATS, [{}]), "nn.silu": (1, FLOATS, [{}]),
    "nn.gelu": (1, FLOATS, [{}, {"approximate": False}]),
    "nn.elu": (1, FLOATS, [{}, {"alpha": 0.5}]), "nn.selu": (1, FLOATS, [{}]),
    "nn.celu": (1, FLOATS, [{}, {"alpha": 2.0}]),
    "nn.leaky_relu": (1, FLOATS, [{}, {"negative_slope": 0.2}]),
    "nn.hard_tanh": (1, FLOATS, [{}]), "nn.hard_sigmoid": (1, FLOATS, [{}]),
    "nn.hard_silu": (1, FLOATS, [{}]), "nn.mish": (1, FLOATS, [{}]),
    "nn.squareplus": (1, FLOATS, [{}, {"b": 2.0}]), "nn.sparse_plus": (1, FLOATS, [{}]),
    "nn.sparse_sigmoid": (1, FLOATS, [{}]),
    # jax.scipy.special's elementwise compositions (ndtr refuses half precision: its error).
    # Not entr and kl_div: compiled, -(x log x) at x = NaN keeps the NaN's sign, where op by
    # op the negation flips it (jit and eager already differ there: a fused negation).
    "sp.ndtr": (1, FLOATS, [{}]), "sp.logit": (1, FLOATS, [{}]),
    "sp.rel_entr": (2, FLOATS, [{}]), "sp.gammasgn": (1, FLOATS, [{}]),
    "sp.gamma": (1, FLOATS, [{}]), "sp.loggamma": (1, FLOATS, [{}]),
}


def function(name):
    """The decorated function a CASES name stands for (jnp's, jax.nn's for nn.*,
    jax.scipy.special's for sp.*)."""
    if name.startswith("nn."):
        return getattr(jax.nn, name[3:])
    if name.startswith("sp."):
        return getattr(jax.scipy.special, name[3:])
    return getattr(jnp, name)


@pytest.fixture(autouse=True)
def no_placement_latches(monkeypatch):
    """Earlier tests in the same process may have committed arrays to devices, used CUDA or
    meshes: process-wide latches that keep every later eager call op by op (conservatively).
    These tests' operands live on the default CPU device, so the latches are cleared for
    them (and restored after)."""
    from corejax import sharding
    from corejax.array import _Placement
    monkeypatch.setattr(_Placement, "cpu_committed", False)
    monkeypatch.setattr(_Placement, "cuda_in_use", False)
    monkeypatch.setattr(_Placement, "cpu_default", None)
    monkeypatch.setattr(sharding.state, "mesh_arrays", False)
    monkeypatch.setattr(sharding.state, "mesh_ops_staged", False)


@pytest.fixture
def fusing(monkeypatch):
    """Fusion from one element on, with empty caches; yields the names of the programs run."""
    monkeypatch.setattr(_eager_fusion, "MIN_SIZE", 1)
    monkeypatch.setattr(_eager_fusion, "_programs", {})
    monkeypatch.setattr(_eager_fusion, "_seen", set())
    monkeypatch.setattr(_eager_fusion, "_scalar_values", {})
    ran = []
    make = _eager_fusion._program

    def counting(fn, *rest):
        program = make(fn, *rest)

        def run(*leaves):
            ran.append(fn.__name__)
            return program(*leaves)
        return run

    monkeypatch.setattr(_eager_fusion, "_program", counting)
    return ran


def op_by_op(f, *args, **kwargs):
    saved = _eager_fusion.MIN_SIZE
    _eager_fusion.MIN_SIZE = 1 << 62
    try:
        return f(*args, **kwargs)
    finally:
        _eager_fusion.MIN_SIZE = saved


def fused(ran, f, *args, **kwargs):
    """f's second call (its first runs op by op), checked to have run a program."""
    f(*args, **kwargs)
    before = len(ran)
    out = f(*args, **kwargs)
    assert len(ran) == before + 1, f"{f.__name__} did not run a compiled program"
    return out


def outcome(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except Exception as e:          # noqa: BLE001 (the error is the outcome compared)
        return e


def assert_same(a, b):
    """Identical results: bits, shapes, dtypes and weak types (or the same error)."""
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b), (a, b)
        return
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            assert_same(p, q)
        return
    assert (a.dtype, a.weak_type, a.shape) == (b.dtype, b.weak_type, b.shape)
    x, y = np.atleast_1d(np.asarray(a)), np.atleast_1d(np.asarray(b))
    differ = (x.view(np.uint8).reshape(x.size, -1) != y.view(np.uint8).reshape(y.size, -1))
    assert not differ.any(), [(i, x.ravel()[i], y.ravel()[i])
                              for i in np.flatnonzero(differ.any(axis=1))[:5]]


def specials(dt):
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [0, 1, 2, 7, info.max, info.max - 1, info.min, info.min + 1]
        vals += [-1, -2, -7] if dt.kind == "i" else []
        return np.array([int(v) for v in vals], object).astype(dt)
    fi = ml_dtypes.finfo(dt)
    nans = np.array([np.nan, -np.nan], np.float32).astype(dt)
    vals = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0, 7.0,
                     float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal),
                     float(fi.max), -float(fi.max), float(fi.eps), 1e-3, 1e3, 40.0, -40.0],
                    np.float64).astype(dt)
    return np.concatenate([vals, nans])


def operands(dt, arity, rng, n=400):
    """`arity` operands: every pair of special values, then random values and bit patterns."""
    sp = specials(dt)
    grid = [g.ravel() for g in np.meshgrid(*[sp] * min(arity, 2))]
    out = []
    for j in range(arity):
        if dt.kind in "iu":
            info = np.iinfo(dt)
            rand = np.concatenate([rng.integers(max(info.min, -50), 50, n).astype(dt),
                                   rng.integers(info.min, info.max, n, dt, endpoint=True)])
        else:
            scale = np.exp(rng.uniform(-12, 12, n)) * rng.choice([-1, 1], n)
            bits = rng.integers(0, 1 << (8 * dt.itemsize), n, dtype=np.uint64)
            rand = np.concatenate([(rng.standard_normal(n) * 4).astype(dt),
                                   scale.astype(dt),
                                   bits.astype(f"u{dt.itemsize}").view(dt)])
        out.append(jnp.asarray(np.concatenate([grid[min(j, len(grid) - 1)], rand])))
    return out


def case_params(dtypes_of):
    return [pytest.param(name, dt, kw, id=f"{name}-{dt.name}-{i}")
            for name, (_, dts, kws) in CASES.items() for dt in dtypes_of(dts)
            for i, kw in enumerate(kws)]


def check_bits(fusing, name, dt, kwargs):
    arity = CASES[name][0]
    f = function(name)
    rng = np.random.default_rng(0)
    args = operands(dt, arity, rng)
    if name == "ldexp":
        args[1] = jnp.asarray(rng.integers(-300, 300, args[0].size).astype(np.int32))
    expected = outcome(op_by_op, f, *args, **kwargs)
    if isinstance(expected, Exception):     # (a function refusing the dtype): the same error
        for _ in range(2):
            assert_same(outcome(f, *args, **kwargs), expected)
    else:
        assert_same(fused(fusing, f, *args, **kwargs), expected)


@pytest.mark.parametrize("name,dt,kwargs", case_params(lambda dts: dts))
def test_fused_results_are_the_op_by_op_bits(fusing, name, dt, kwargs):
    check_bits(fusing, name, dt, kwargs)


@pytest.mark.parametrize("name,dt,kwargs", case_params(
    lambda dts: [np.dtype(np.float64)] * (FLOATS[0] in dts) +
    [np.dtype(np.int64), np.dtype(np.uint64)] * (INTS[0] in dts)))
def test_fused_results_are_the_op_by_op_bits_in_64_bits(fusing, x64, name, dt, kwargs):
    check_bits(fusing, name, dt, kwargs)


def test_wofz_runs_fused_with_the_op_by_op_bits(fusing):
    # wofz's decorated body is private (its custom_jvp wraps it): every half-plane, the axes,
    # large and tiny arguments, infinities and nan
    rng = np.random.default_rng(5)
    parts = np.concatenate([rng.standard_normal(200) * 3, [0.0, -0.0, 1e-30, 40.0, -40.0, 1e20,
                                                           -1e20, np.inf, -np.inf, np.nan]])
    re, im = np.meshgrid(parts[::7], parts[::5])
    z = jnp.asarray((re + 1j * im).ravel().astype(np.complex64))
    assert_same(fused(fusing, jax.scipy.special.wofz, z),
                op_by_op(jax.scipy.special.wofz, z))
    assert fusing[-1] == "_wofz_value"


def test_every_decorated_function_is_compared():
    public = [("", getattr(jnp, name)) for name in dir(jnp)]
    public += [("nn.", getattr(jax.nn, name)) for name in dir(jax.nn)]
    public += [("sp.", getattr(jax.scipy.special, name)) for name in dir(jax.scipy.special)]
    decorated = {prefix + fn.__name__ for prefix, fn in
                 [(prefix, getattr(f, "_func", f)) for prefix, f in public]  # (ufuncs')
                 if getattr(fn, "__code__", None) is jnp.hypot.__code__}
    assert decorated == set(CASES)


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.complex64, np.int32],
                         ids=["f32", "f16", "c64", "i32"])
def test_variance_squared_deviations(fusing, dt):
    # var / std fuse their squared deviations (the sums stay op by op), or, reducing a real
    # array whole (float32 here, f16 and ints computed in float32), sum them in one pass
    # (sum_of_squared_deviations: no program)
    rng = np.random.default_rng(4)
    base = np.concatenate([specials(np.dtype(np.float32))[:-4], rng.standard_normal(190)])
    x = (base.reshape(10, 21) * (1 + 1j if np.dtype(dt).kind == "c" else 1)).astype(dt)
    x = jnp.asarray(x)
    mask = jnp.asarray(rng.random((10, 21)) > 0.3)
    for kwargs in ({}, {"axis": 0}, {"axis": 1, "ddof": 1, "keepdims": True},
                   {"axis": (0, 1), "where": mask}, {"dtype": jnp.float32}):
        one_pass = "axis" not in kwargs and (dt != np.complex64 or "dtype" in kwargs)
        for f in (jnp.var, jnp.std):
            expected = op_by_op(f, x, **kwargs)
            if one_pass:
                for _ in range(2):
                    assert_same(f(x, **kwargs), expected)
            else:
                assert_same(fused(fusing, f, x, **kwargs), expected)
    assert set(fusing) == {"_squared_deviations"}


def _count_one_passes(monkeypatch, module, name):
    """Replaces module.name (an _eager_fusion one-pass hook) by a wrapper recording, per
    call, whether the one pass ran (returned a value); returns that list."""
    calls = []
    one_pass = getattr(_eager_fusion, name)

    def counting(*args):
        out = one_pass(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_one_pass_variance_has_the_op_by_op_bits(fusing, split, dt, monkeypatch):
    from corejax.numpy import _reductions
    calls = _count_one_passes(monkeypatch, _reductions, "sum_of_squared_deviations")
    rng = np.random.default_rng(8)
    sp = specials(np.dtype(dt))
    for n in (1, 7, 129, 1000, 40_001, 300_000):
        for case in range(4):
            x = (rng.standard_normal(n) * 10 ** rng.uniform(-20, 20)).astype(dt)
            if case == 1:
                x[rng.integers(0, n, 3)] = rng.choice(sp, 3)     # inf, NaN, -0.0, ...
            if case == 2:
                x = np.full(n, rng.choice(sp), dt)
            if case == 3:
                x = x.reshape(-1, 1) if n % 2 else x.reshape(2, -1)
            a = jnp.asarray(x)
            for kwargs in ({}, {"ddof": 1}, {"keepdims": True}):
                for f in (jnp.var, jnp.std):
                    assert_same(f(a, **kwargs), op_by_op(f, a, **kwargs))
    # every call took the one pass (and every op-by-op call, with MIN_SIZE out of reach, not)
    assert calls and all(calls[0::2]) and not any(calls[1::2])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_one_pass_nansum_has_the_op_by_op_bits(fusing, split, dt, monkeypatch):
    from corejax.numpy import _nan
    calls = _count_one_passes(monkeypatch, _nan, "nan_to_zero_sum")
    rng = np.random.default_rng(9)
    for n in (1, 7, 129, 1000, 40_001, 300_000):
        for case in range(4):
            x = (rng.standard_normal(n) * 10 ** rng.uniform(-20, 20)).astype(dt)
            x[rng.integers(0, n, max(1, n // 50))] = np.nan
            if case == 1:
                x[rng.integers(0, n, 2)] = rng.choice([np.inf, -np.inf, -0.0], 2)
            if case == 2:
                x = np.where(rng.random(n) < 0.5, np.nan, -0.0).astype(dt)
            if case == 3:
                x = x.reshape(-1, 1) if n % 2 else x.reshape(2, -1)
            a = jnp.asarray(x)
            for kwargs in ({}, {"keepdims": True}):
                assert_same(jnp.nansum(a, **kwargs), op_by_op(jnp.nansum, a, **kwargs))
    assert calls and all(calls[0::2]) and not any(calls[1::2])
    # other arguments: the composition
    x = jnp.asarray(np.array([[1.0, np.nan], [3.0, 4.0]] * 20, dt))
    for kwargs in ({"axis": 0}, {"initial": 2.0}, {"where": x > 1}, {"dtype": np.float64}):
        calls.clear()
        assert_same(jnp.nansum(x, **kwargs), op_by_op(jnp.nansum, x, **kwargs))
        assert calls == []


# --- flat loops split over threads ---------------------------------------------------------------

@pytest.fixture
def flat_loops(monkeypatch):
    """Records each program's flat loop (None: run by its jit)."""
    built = []
    make = _eager_fusion._flat_loop

    def recording(composed, leaves):
        loop = make(composed, leaves)
        built.append((composed.__name__, loop is not None))
        return loop

    monkeypatch.setattr(_eager_fusion, "_flat_loop", recording)
    return built


def test_elementwise_programs_run_as_flat_loops(fusing, flat_loops):
    x, y = operands(np.dtype(np.float32), 2, np.random.default_rng(6))
    for f, args in ((jnp.hypot, (x, y)), (jnp.log2, (x,)), (jnp.copysign, (x, 2.0)),
                    (jnp.heaviside, (x, 0.5)), (jnp.clip, (x, -1, 2.5)), (jnp.isinf, (x,)),
                    (jnp.divmod, (x, y)), (jnp.logaddexp, (x, y))):
        assert_same(fused(fusing, f, *args), op_by_op(f, *args))
    # var's squared deviations along an axis broadcast a (1, n)-shaped mean: run by jit
    x2 = x.reshape(2, -1)
    assert_same(fused(fusing, jnp.var, x2, axis=0), op_by_op(jnp.var, x2, axis=0))
    # (logaddexp is a custom_jvp function: its primal body, inlined, is the loop)
    assert dict(flat_loops) == {"hypot": True, "log2": True, "copysign": True,
                                "heaviside": True, "clip": True, "isinf": True,
                                "divmod": True, "logaddexp": True,
                                "_squared_deviations": False}


@pytest.fixture
def split(monkeypatch):
    """Every loop of 256 elements or more split over threads, as if four cores were there and
    splitting paid."""
    from corejax.compiler import eager_kernels, eager_threads
    monkeypatch.setattr(eager_kernels, "_helpers", lambda: 2)
    monkeypatch.setattr(eager_kernels, "split_cores", lambda key, n: 4 if n >= 256 else 1)
    monkeypatch.setattr(eager_threads, "WAKE_SECONDS", 0.0)    # (short jobs wake them too)


@pytest.mark.parametrize("name,dt,kwargs", case_params(
    lambda dts: [d for d in dts if d in (np.float32, np.int32)]))
def test_split_programs_give_the_op_by_op_bits(fusing, split, name, dt, kwargs):
    check_bits(fusing, name, dt, kwargs)


# --- Python scalar operands -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["hypot", "copysign", "heaviside", "floor_divide", "remainder",
                                  "logaddexp", "fmax", "clip", "isclose"])
@pytest.mark.parametrize("dt", [np.float32, np.int32], ids=["f32", "i32"])
def test_python_scalar_operands(fusing, name, dt):
    dt = np.dtype(dt)
    (x,) = operands(dt, 1, np.random.default_rng(1))
    f = getattr(jnp, name)
    for s in (2.5, -0.0, 3, -7, True, 1e30, 2 ** 31 - 1):
        for args in ([(x, s, 9), (x, -1, s)] if name == "clip" else [(x, s), (s, x)]):
            expected = outcome(op_by_op, f, *args)
            for _ in range(2):
                assert_same(outcome(f, *args), expected)
    assert fusing


def test_operands_passed_by_keyword_run_op_by_op(fusing):
    (x,) = operands(np.dtype(np.float32), 1, np.random.default_rng(5))
    for _ in range(2):
        assert_same(jnp.clip(x, max=0.5), op_by_op(jnp.clip, x, max=0.5))
        assert_same(jnp.isclose(x, b=x), op_by_op(jnp.isclose, x, b=x))
    assert not {"clip", "isclose"} & set(fusing)     # (isclose's own isinf may fuse)


def test_a_new_scalar_value_reuses_the_program(fusing):
    (x,) = operands(np.dtype(np.float32), 1, np.random.default_rng(2))
    for h0 in (0.5, 0.25, -0.0, 7.0):
        assert_same(fused(fusing, jnp.heaviside, x, h0), op_by_op(jnp.heaviside, x, h0))
    assert len(_eager_fusion._programs) == 1


def test_scalars_whose_conversion_differs_run_op_by_op(fusing):
    # int8 // 300: the op-by-op path's error; float16 with a Python float: rounding through
    # float32 could differ from the direct conversion, so no program
    x8 = jnp.asarray(np.arange(-50, 50, dtype=np.int8))
    expected = outcome(op_by_op, jnp.floor_divide, x8, 300)
    for _ in range(2):
        assert_same(outcome(jnp.floor_divide, x8, 300), expected)
    h = jnp.asarray(np.linspace(-3, 3, 101).astype(np.float16))
    for _ in range(2):
        assert_same(jnp.hypot(h, 0.1), op_by_op(jnp.hypot, h, 0.1))
    assert fusing == []


def test_a_scalar_is_judged_again_for_other_operand_dtypes(fusing):
    # The scalar's conversion is remembered per operand dtypes: 0.1 converts as the op-by-op
    # path does for float32 operands, not for float16 ones (rounding through float32 could
    # differ), and the float32 answer must not carry over.
    x = jnp.asarray(np.linspace(-3, 3, 101).astype(np.float32))
    h = jnp.asarray(np.linspace(-3, 3, 101).astype(np.float16))
    for _ in range(2):
        assert_same(jnp.hypot(x, 0.1), op_by_op(jnp.hypot, x, 0.1))
        assert_same(jnp.hypot(h, 0.1), op_by_op(jnp.hypot, h, 0.1))
    assert fusing == ["hypot"]


# --- static arguments, weak types, errors -------------------------------------------------------

def test_static_arguments_are_keyed_by_type_and_value(fusing):
    x = jnp.asarray(np.array([np.nan, np.inf, -np.inf, 1.5] * 8, np.float32))
    zero = fused(fusing, jnp.nan_to_num, x, nan=0.0)
    minus_zero = fused(fusing, jnp.nan_to_num, x, nan=-0.0)
    assert np.signbit(np.asarray(zero)[0]) == False       # noqa: E712
    assert np.signbit(np.asarray(minus_zero)[0]) == True  # noqa: E712
    y = jnp.asarray(np.linspace(-3, 3, 40, dtype=np.float32))
    for d in (0, 1, 2, -1):
        assert_same(fused(fusing, jnp.round, y, d), op_by_op(jnp.round, y, d))
    assert_same(fused(fusing, jnp.isclose, x, y[:32], 0.5, 0.25),
                op_by_op(jnp.isclose, x, y[:32], 0.5, 0.25))


def test_weak_types_and_dtypes(fusing):
    n = 64
    weak = lax.full((n,), 1.5, np.float32, weak_type=True)
    strong = jnp.asarray(np.linspace(-2, 2, n, dtype=np.float32))
    ints = jnp.asarray(np.arange(-32, 32, dtype=np.int32))
    for f in (jnp.hypot, jnp.copysign, jnp.logaddexp, jnp.floor_divide, jnp.remainder,
              jnp.heaviside, jnp.fmax):
        for a, b in ((weak, weak), (weak, strong), (ints, weak), (ints, 2.5), (weak, 3),
                     (ints, ints)):
            expected = op_by_op(f, a, b)
            got = fused(fusing, f, a, b)
            assert_same(got, expected)
    assert fused(fusing, jnp.hypot, weak, weak).weak_type


def test_errors_are_the_op_by_op_errors(fusing):
    a, b = jnp.ones(3), jnp.ones(4)
    bools = jnp.asarray(np.array([True, False] * 8))
    floats = jnp.asarray(np.linspace(1, 2, 16, dtype=np.float32))
    ints = jnp.asarray(np.arange(16, dtype=np.int32))
    calls = [(jnp.hypot, a, b), (jnp.floor_divide, bools, bools), (jnp.gcd, floats, floats),
             (jnp.round, ints, -1), (jnp.frexp, jnp.asarray(np.ones(4, np.complex64))),
             (jnp.clip, jnp.asarray(np.ones(4, np.complex64)), 0, 1)]
    for f, *args in calls:
        expected = outcome(op_by_op, f, *args)
        assert isinstance(expected, Exception), f
        for _ in range(2):      # op by op, then traced for the program: the same error
            assert_same(outcome(f, *args), expected)


# --- small arrays, settings, transformations ----------------------------------------------------

def test_small_arrays_run_op_by_op():
    x = jnp.asarray(np.linspace(-1, 1, 16, dtype=np.float32))
    seen = set(_eager_fusion._seen)
    for _ in range(3):
        jnp.hypot(x, x)
        jnp.floor_divide(x, 0.25)
    assert _eager_fusion._seen == seen


@pytest.mark.parametrize("setting,value", [("jax_disable_jit", True), ("jax_debug_nans", True),
                                           ("jax_numpy_rank_promotion", "warn"),
                                           ("jax_numpy_dtype_promotion", "strict"),
                                           ("jax_log_compiles", True)])
def test_settings_that_eager_evaluation_honours_keep_op_by_op(fusing, setting, value):
    x = jnp.asarray(np.linspace(-1, 1, 32, dtype=np.float32))
    prev = getattr(jax.config, setting[4:])
    jax.config.update(setting, value)
    try:
        for _ in range(2):
            assert_same(jnp.hypot(x, x), op_by_op(jnp.hypot, x, x))
    finally:
        jax.config.update(setting, prev)
    assert fusing == []


def test_debug_nans_reports_the_primitive_as_before(fusing):
    x = jnp.asarray(np.array([np.inf, 1.0] * 8, np.float32))    # inf - inf inside
    with jax.debug_nans(True):
        expected = outcome(op_by_op, jnp.logaddexp, x, x)
        assert isinstance(expected, FloatingPointError)
        for _ in range(2):
            assert_same(outcome(jnp.logaddexp, x, x), expected)
    assert fusing == []


def test_make_jaxpr_is_unchanged(fusing):
    x, y = operands(np.dtype(np.float32), 2, np.random.default_rng(3))
    outside = jnp.asarray(np.linspace(0, 1, x.size, dtype=np.float32))

    def f(a, b):
        return jnp.hypot(a, b) + jnp.floor_divide(a, 3) + jnp.heaviside(outside, 0.5)

    for name in CASES:
        if CASES[name][0] == 2 and name not in ("gcd", "lcm", "ldexp", "divmod"):
            g = function(name)
            assert str(jax.make_jaxpr(g)(x, y)) == str(op_by_op(jax.make_jaxpr(g), x, y))
    for _ in range(2):
        f(x, y)
        traced = str(jax.make_jaxpr(f)(x, y))
    assert traced == str(op_by_op(jax.make_jaxpr(f), x, y))
    assert "hypot" not in traced


def test_jit_grad_vmap_of_decorated_functions(fusing):
    x, y = (jnp.asarray(np.linspace(0.5, 2, 64, dtype=np.float32) * s) for s in (1, -1))
    for f in (jnp.hypot, jnp.logaddexp, jnp.copysign, jnp.heaviside):
        eager = fused(fusing, f, x, y)
        assert_same(jax.jit(f)(x, y), eager)
        rows = jax.vmap(f)(x.reshape(8, 8), y.reshape(8, 8))
        assert_same(rows.reshape(64), eager)
    ran = len(fusing)
    g = jax.grad(lambda a: jnp.hypot(a, y).sum())(x)
    expected = op_by_op(jax.grad(lambda a: jnp.hypot(a, y).sum()), x)
    assert_same(g, expected)
    assert len(fusing) == ran        # traced operands: the composition, not a program
    # concrete operands under grad are evaluated eagerly (fused), as values
    h = jax.grad(lambda t: (t * jnp.hypot(x, y)).sum())(2.0)
    assert_same(h, op_by_op(jax.grad(lambda t: (t * jnp.hypot(x, y)).sum()), 2.0))

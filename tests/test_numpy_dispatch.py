"""The jnp layer's short paths for the commonest eager calls (numpy/_core.plain_binary: an
Array with a Python scalar or with an Array of its dtype, shape and weak type; whole-array
float sums and means): the same values, dtypes and weak types as the full path, bit for bit,
special values included, and the full path wherever a setting or a trace must decide."""
import warnings

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import core
from corejax.numpy import _core, _reductions

BINARY = ["add", "subtract", "multiply", "true_divide", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "maximum", "minimum"]
SCALARS = [1.0, 0.1, -0.0, 0.0, 3, -7, 2.5e-39, 1e300, float("inf"), float("-inf"),
           float("nan"), 1 << 30]
SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, 0.1, 3e38, -3e38, 1e-42, np.inf, -np.inf, np.nan,
                    7.0, 1e-30, 65504.0, -2.0, 0.5])


def _operands(dtype, weak, shape):
    v = SPECIAL.astype(dtype)
    v = np.resize(v, shape) if shape else v[4]
    x = jnp.asarray(v)
    if weak:
        x = core.eval_hooks.apply_primitive(corejax.lax.convert_element_type_p, [x],
                                            {"new_dtype": np.dtype(dtype), "weak_type": True})
    return x


def _full_path(monkeypatch, fn):
    """fn() with the short paths off."""
    with monkeypatch.context() as m:
        m.setattr(_core, "_PLAIN_MAX_SIZE", -1)
        m.setattr(_reductions, "_PLAIN_DTYPES", frozenset())
        return fn()


def _same(got, want):
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.weak_type == want.weak_type
    g, w = np.asarray(got), np.asarray(want)
    assert g.tobytes() == w.tobytes(), (g, w)


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
    if request.param == "float64":
        prev = corejax.config.enable_x64
        corejax.config.update("jax_enable_x64", True)
        yield request.param
        corejax.config.update("jax_enable_x64", prev)
    else:
        yield request.param


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("weak", [False, True])
@pytest.mark.parametrize("shape", [(), (16,), (3, 5)])
def test_array_and_python_scalar_match_the_full_path(monkeypatch, name, weak, shape, dtype):
    f = getattr(jnp, name)
    x = _operands(dtype, weak, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for s in SCALARS:
            for args in ((x, s), (s, x)):
                _same(f(*args), _full_path(monkeypatch, lambda: f(*args)))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("weak", [False, True])
def test_two_arrays_match_the_full_path(monkeypatch, name, weak, dtype):
    f = getattr(jnp, name)
    x = _operands(dtype, weak, (16,))
    y = _operands(dtype, weak, (16,))[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(f(x, y), _full_path(monkeypatch, lambda: f(x, y)))
        _same(f(x, x), _full_path(monkeypatch, lambda: f(x, x)))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", [((16,), (1,)), ((3, 5), (3, 1)), ((3, 5), (5,)),
                                    ((4, 1), (1, 4)), ((), (16,)), ((1, 16), (16,))])
@pytest.mark.parametrize("weaks", [(False, False), (True, False), (True, True)])
def test_broadcast_arrays_match_the_full_path(monkeypatch, name, shapes, weaks, dtype):
    f = getattr(jnp, name)
    x = _operands(dtype, weaks[0], shapes[0])
    y = _operands(dtype, weaks[1], shapes[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a, b in ((x, y), (y, x)):
            _same(f(a, b), _full_path(monkeypatch, lambda: f(a, b)))


def test_what_the_full_path_refuses_is_refused_by_it():
    x, y = jnp.ones(3, jnp.float32), jnp.ones(4, jnp.float32)
    with pytest.raises(TypeError, match="incompatible shapes"):
        x + y
    with pytest.raises(ValueError):
        x + jnp.ones((2, 4), jnp.float32)
    prev = corejax.config.numpy_rank_promotion
    corejax.config.update("jax_numpy_rank_promotion", "raise")
    try:
        with pytest.raises(ValueError, match="rank_promotion"):
            x / jnp.ones((2, 3), jnp.float32)
        x / jnp.ones((), jnp.float32)       # a rank-0 operand is not a promotion
    finally:
        corejax.config.update("jax_numpy_rank_promotion", prev)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("shape", [(16,), (3, 5), (1,), (2, 3, 4)])
def test_whole_array_reductions_match_the_full_path(monkeypatch, name, shape, dtype):
    f = getattr(jnp, name)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(shape).astype(dtype))
    _same(f(x), _full_path(monkeypatch, lambda: f(x)))
    xs = jnp.asarray(np.resize(SPECIAL, shape).astype(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(f(xs), _full_path(monkeypatch, lambda: f(xs)))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis", [0, -1, (0, 2), (), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_axes_match_the_full_path(monkeypatch, name, axis, keepdims, dtype):
    f = getattr(jnp, name)
    x = jnp.asarray(np.resize(SPECIAL, (2, 3, 4)).astype(dtype))
    y = jnp.asarray(np.random.default_rng(1).standard_normal((2, 3, 4)).astype(dtype))
    kwargs = [{}] if name == "mean" else [{}, {"initial": 0.5}, {"initial": -3}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a in (x, y, y.astype(dtype) * 1.0):
            for kw in kwargs:
                _same(f(a, axis, keepdims=keepdims, **kw),
                      _full_path(monkeypatch, lambda: f(a, axis, keepdims=keepdims, **kw)))
    with pytest.raises(ValueError, match="out of bounds"):
        f(y, 3)


@pytest.mark.parametrize("shape", [(), (16,), (3, 5)])
@pytest.mark.parametrize("weaks", [(False, False), (True, False), (True, True)])
def test_where_matches_the_full_path(monkeypatch, plain_process, shape, weaks, dtype):
    x = _operands(dtype, weaks[0], shape)
    y = _operands(dtype, weaks[1], shape)
    y = y[::-1] if shape else y
    c = x > 0.3
    for args in ((c, x, y), (c, y, x), (c, x, 0.0), (c, -2, y), (c, 1.5, x)):
        _same(jnp.where(*args), _full_path(monkeypatch, lambda: jnp.where(*args)))
    # other shapes, dtypes, a non-bool condition: the full path
    assert _binds(lambda: jnp.where(c, x, y))[1] == []
    if shape:
        z = jnp.ones((1,) + shape[-1:], x.dtype)
        _same(jnp.where(c, x, z), _full_path(monkeypatch, lambda: jnp.where(c, x, z)))
        assert _binds(lambda: jnp.where(c, x, z))[1]


def _binds(fn):
    """(result, how many primitives fn evaluated eagerly)."""
    calls = []
    prev = core.eval_hooks.apply_primitive

    def counting(primitive, args, params):
        calls.append(primitive.name)
        return prev(primitive, args, params)
    core.eval_hooks.apply_primitive = counting
    try:
        return fn(), calls
    finally:
        core.eval_hooks.apply_primitive = prev


@pytest.fixture
def plain_process(monkeypatch):
    """Eager evaluation as in a fresh process: placement as where no array was put on a CUDA
    device or committed to a CPU device other than cpu:0 (both stay set in a process once they
    happen: an earlier test of this worker may have done either), and no guard or check on."""
    from corejax._guards import Guards
    from corejax._transfer_guard import Guarded
    from corejax.array import _NanChecks, _Placement
    for cls, name in ((_Placement, "cuda_in_use"), (_Placement, "cpu_committed"),
                      (_NanChecks, "enabled"), (Guarded, "host_to_device"),
                      (Guards, "no_execution")):
        monkeypatch.setattr(cls, name, False)


def test_the_short_paths_are_taken_and_left_where_they_must_be(plain_process):
    x = jnp.arange(16, dtype=jnp.float32)
    for fn in (lambda: x + 1.0, lambda: 2 * x, lambda: x / 4.0, lambda: 1 / (x + 1),
               lambda: x > 0.5, lambda: x * x, lambda: x == x):
        assert _binds(fn)[1] == []
    assert _binds(lambda: x + 1.5j)[1]                       # complex: the full path
    assert _binds(lambda: x.astype(jnp.int32) + 1)[1]        # integers: the full path
    big = jnp.ones(1 << 14, jnp.float32)                     # eager kernels may run there
    assert _binds(lambda: big + 1.0)[1]
    ones, ints = jnp.ones((1, 16), jnp.float32), jnp.ones(16, jnp.int32)
    assert _binds(lambda: x / ones)[1] == []                  # broadcasting
    assert _binds(lambda: x + ints)[1]                         # promotion: the full path
    assert _binds(lambda: jnp.sum(x))[1] == []
    assert _binds(lambda: jnp.sum(big))[1] == ["reduce_sum"]   # its eager kernel decides
    # a setting eager evaluation honours sends the call the full way
    with corejax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            x * float("nan")
        with pytest.raises(FloatingPointError), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            x / 0.0 - x / 0.0
    # under a trace the operation is staged, not computed
    jaxpr = corejax.make_jaxpr(lambda: x + 1.0)()
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns][-1:] == ["add"]


def test_the_short_paths_warn_as_the_full_path(monkeypatch, plain_process):
    """They compute with the primitive's own impl, so they raise NumPy's floating-point
    warnings where it does and not where it does not (the division's impl is quiet, as XLA
    is; a product that overflows warns on both paths)."""
    x = jnp.asarray(np.array([0.0, 1.0, 3e38, -2.0], np.float32))
    for fn in (lambda: x / 0.0, lambda: 1 / x, lambda: x / x, lambda: x * 10.0,
               lambda: x / jnp.zeros((1,), jnp.float32), lambda: jnp.maximum(x, np.nan)):
        for path in (fn, lambda: _full_path(monkeypatch, fn)):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                path()
            if path is fn:
                short = sorted(str(w.message) for w in seen)
            else:
                assert short == sorted(str(w.message) for w in seen)


def test_integer_pow_evaluates_as_one_primitive():
    """Its impl squares NumPy values (it once took lax's abs for the builtin, and evaluated
    its exponent's bits as Arrays: 100 us for x ** 2 on 16 floats)."""
    x = jnp.arange(16, dtype=jnp.float32) / 3
    v = np.asarray(x)
    x2 = v * v
    # repeated squaring, as XLA expands integer powers
    want = {2: x2, 3: v * x2, -2: np.float32(1) / x2, 7: (v * x2) * (x2 * x2)}
    for y, w in want.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got, calls = _binds(lambda: x ** y)
        assert calls == ["integer_pow"]
        assert np.asarray(got).tobytes() == w.tobytes()

"""Every public function against JAX's recorded results (golden_conformance.*, made by
gen_conformance.py): values (ulp-aware), dtypes, weak types, shapes and error types, eagerly and
under jit, vmap, grad, jvp, vjp, jit(grad) and second order (jvp of grad).

One test per (function, case, transformation); ids read "<fn>/<case>|<transform>".
"""
import json
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
import corejax.scipy.special

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

with open(os.path.join(HERE, "golden_conformance.json")) as _fh:
    GOLDEN = json.load(_fh)["entries"]
with np.load(os.path.join(HERE, "golden_conformance.npz")) as _npz:
    # ml_dtypes' arrays (bfloat16, float8, int4 ...) are stored as their raw bits: viewed back
    FLAT = {k: _npz[k].view(k) if _npz[k].dtype.kind in "uV" and _npz[k].dtype.name != k
            else _npz[k] for k in _npz.files}


FW = cases.Framework(corejax)

# "<case id>|<transform>" -> why it fails; each listed key runs as xfail(strict=True), so
# fixing the bug turns it into a failure that asks for the entry to be removed.
KNOWN_FAILURES: dict = {}

# JAX on CPU refuses some programs for a limitation of its CPU backend, not by the function's
# semantics: there corejax computes, and its result is held to JAX's result for the same call
# run another way (the key named here), so the case still checks a value.
PLATFORM_LIMITS = {
    "nn.dot_product_attention/f16|jit": (
        "nn.dot_product_attention/f16|eager",
        "XLA:CPU has no float16 dot with float32 accumulation under jit (JAX raises ValueError "
        "\"The precision 'F16_F16_F32' is not supported by dot_general on CPU\"; eager JAX "
        "computes it, and so does JAX on GPU)"),
}

# Where JAX's jit (XLA:CPU's fused float32 code) disagrees with JAX's own eager result, at
# infinite inputs: corejax gives the eager result under jit too, and is held to it. The test
# checks that the two JAX results really differ, so an entry goes when JAX's do not.
JAX_JIT_DEVIATIONS = {
    **dict.fromkeys(
        ("scipy.stats.cauchy.logcdf/special|jit", "scipy.stats.cauchy.logsf/special|jit"),
        "at x = -inf (logcdf) / +inf (logsf) JAX's jit gives -18.889523 (log 6.3e-9: its fused "
        "0.5 + atan(z) / pi stays above 0); JAX eager gives -inf"),
    **dict.fromkeys(
        ("scipy.stats.gumbel_l.logpdf/special|jit", "scipy.stats.gumbel_r.logpdf/special|jit",
         "scipy.stats.gumbel_l.pdf/special|jit"),
        "at x = -inf (gumbel_r) / +inf (gumbel_l) JAX's jit gives +inf for the density's "
        "-inf + exp(+inf); JAX eager gives NaN"),
}
assert not set(PLATFORM_LIMITS) & set(KNOWN_FAILURES)
assert not set(JAX_JIT_DEVIATIONS) & (set(PLATFORM_LIMITS) | set(KNOWN_FAILURES))

# a transformation's result goes through more operations than the function alone
TRANSFORM_ULP_FACTOR = {"eager": 1, "jit": 1, "vmap": 1, "grad": 4, "jvp": 4, "vjp": 4,
                        "jit_grad": 4, "hvp": 16}


def _params():
    out = []
    for c, transform in cases.entries():
        key = f"{c['id']}|{transform}"
        marks = []
        if key in KNOWN_FAILURES:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[key]))
        out.append(pytest.param(c, transform, id=key, marks=marks))
    return out


def _same_golden(a, b) -> bool:
    """Whether two golden entries record the same result (structure, leaves, values; NaNs
    equal)."""
    if ("error" in a) != ("error" in b) or a.get("tree") != b.get("tree"):
        return False
    if "error" in a:
        return a["error"] == b["error"]
    for x, y in zip(a["leaves"], b["leaves"]):
        if x[0] != "array" or y[0] != "array":
            if x != y:
                return False
            continue
        if x[1:4] != y[1:4]:
            return False
        size = int(np.prod(x[2])) if x[2] else 1
        if not np.array_equal(FLAT[x[1]][x[4]:x[4] + size], FLAT[y[1]][y[4]:y[4] + size],
                              equal_nan=cases.kind_of(x[1]) in "fc"):
            return False
    return True


def _exception_matches(exc, golden):
    names = [t.__name__ for t in type(exc).__mro__]
    if golden["error"] in names:
        return True
    builtin = [n for n in golden["mro"] if n in dir(__builtins__) or hasattr(
        __import__("builtins"), n)]
    # a JAX-specific class (ConcretizationTypeError, ...): its nearest builtin base suffices
    return bool(builtin) and builtin[0] not in ("Exception", "BaseException") and \
        builtin[0] in names


def _compare_array(got, expected_leaf, tol_ulp, where):
    _, dtype, shape, weak, offset = expected_leaf
    got_desc = cases.describe_leaf(got)
    assert got_desc[0] == "array", f"{where}: expected an array, got {type(got).__name__}"
    g_dtype, g_shape, g_weak = got_desc[1]
    assert (g_dtype, list(g_shape)) == (dtype, shape), (
        f"{where}: dtype/shape {g_dtype}{list(g_shape)} != JAX's {dtype}{shape}")
    assert g_weak == weak, f"{where}: weak_type {g_weak} != JAX's {weak} ({dtype}{shape})"
    size = int(np.prod(shape)) if shape else 1
    expected = FLAT[dtype][offset:offset + size].reshape(shape)
    actual = np.asarray(got)
    if np.dtype(dtype).kind == "c":  # complex: the real and imaginary parts, compared as floats
        expected = np.stack([expected.real, expected.imag], -1)
        actual = np.stack([actual.real, actual.imag], -1)
        dtype = expected.dtype.name
    if cases.kind_of(dtype) != "f" or tol_ulp == 0:
        if cases.kind_of(dtype) == "f":   # (exact in float64, where NumPy's equality knows NaN:
            actual, expected = actual.astype(np.float64), expected.astype(np.float64)  # bf16...)
        np.testing.assert_array_equal(actual, expected, err_msg=where)
        return
    e64, a64 = expected.astype(np.float64), actual.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a64), np.isnan(e64), err_msg=f"{where}: NaNs")
    finite = np.isfinite(e64)
    np.testing.assert_array_equal(a64[~finite & ~np.isnan(e64)], e64[~finite & ~np.isnan(e64)],
                                  err_msg=f"{where}: infinities")
    if not finite.any():
        return
    eps = float(ml_dtypes.finfo(dtype).eps)
    scale = np.max(np.abs(e64[finite]))
    tol = tol_ulp * eps * (np.abs(e64) + scale)
    with np.errstate(invalid="ignore"):
        bad = finite & ~(np.abs(a64 - e64) <= tol)
    if bad.any():
        with np.errstate(invalid="ignore"):
            err = np.max(np.abs(a64 - e64)[finite] / (eps * (np.abs(e64[finite]) + scale)))
        raise AssertionError(
            f"{where}: values differ beyond {tol_ulp} ulp (worst {err:.1f} ulp of the leaf's "
            f"scale)\n corejax: {actual}\n JAX:     {expected}")


def _compare_py(got, expected_leaf, where):
    _, type_name, value = expected_leaf
    desc = cases.describe_leaf(got)
    assert desc[0] == "py", f"{where}: expected a Python {type_name}, got {type(got).__name__}"
    assert desc[1][0] == type_name, f"{where}: type {desc[1][0]} != JAX's {type_name}"
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        value = float(value)
    if isinstance(value, float):
        np.testing.assert_allclose(desc[1][1], value, rtol=1e-6, err_msg=where)
    else:
        assert desc[1][1] == value, f"{where}: {desc[1][1]!r} != JAX's {value!r}"


@pytest.fixture
def flags():
    prev = (corejax.config.enable_x64, corejax.config.threefry_partitionable)
    yield
    corejax.config.update("jax_enable_x64", prev[0])
    corejax.config.update("jax_threefry_partitionable", prev[1])


@pytest.mark.parametrize("case,transform", _params())
def test_conformance(case, transform, flags):
    key = f"{case['id']}|{transform}"
    golden = GOLDEN.get(key)
    assert golden is not None, (
        f"no golden entry for {key}: regenerate with "
        "/work/jaxvenv/bin/python tests/conformance/gen_conformance.py")
    corejax.config.update("jax_enable_x64", case["x64"])
    corejax.config.update("jax_threefry_partitionable", case["partitionable"])
    if key in PLATFORM_LIMITS:
        assert "error" in golden, f"{key}: JAX computes it now; drop it from PLATFORM_LIMITS"
        golden = GOLDEN[PLATFORM_LIMITS[key][0]]
    if key in JAX_JIT_DEVIATIONS:
        eager = GOLDEN[key.rsplit("|", 1)[0] + "|eager"]
        assert not _same_golden(golden, eager), \
            f"{key}: JAX's jit and eager results agree now; drop it from JAX_JIT_DEVIATIONS"
        golden = eager
    if "error" in golden:
        try:
            out = cases.run(case, transform, FW)
            cases.flatten(out)[0] and [np.asarray(x) for x in cases.flatten(out)[0]
                                       if hasattr(x, "dtype")]
        except Exception as exc:  # noqa: BLE001
            assert _exception_matches(exc, golden), (
                f"corejax raised {type(exc).__name__}: {exc}; JAX raised {golden['error']}")
            return
        pytest.fail(f"JAX raised {golden['error']}; corejax returned {out!r}")
    out = cases.run(case, transform, FW)
    leaves, tree = cases.flatten(out)
    assert tree == golden["tree"], f"output structure {tree} != JAX's {golden['tree']}"
    tol_ulp = case["ulp"] * TRANSFORM_ULP_FACTOR[transform]
    for i, (got, expected) in enumerate(zip(leaves, golden["leaves"])):
        where = f"leaf {i}"
        if expected[0] == "array":
            _compare_array(got, expected, tol_ulp, where)
        elif expected[0] == "py":
            _compare_py(got, expected, where)
        else:
            desc = cases.describe_leaf(got)
            assert list(desc) == expected, f"{where}: {desc} != JAX's {expected}"

"""ml_dtypes' types (bfloat16, float8/6/4, int1/2/4, uint1/2/4) against JAX's recorded results
(tests/golden/ml_dtypes.json / .npz, made by tests/golden/gen_ml_dtypes.py from the
computations of tests/golden/ml_dtypes_cases.py): casts between every pair of dtypes, unary and
binary operations on every pair of values, reductions and matmul, bit for bit, eagerly and under
jit; and finfo, iinfo, issubdtype, can_cast, isdtype, itemsize_bits.

JAX's CPU backend (XLA) cannot compute with float6_e2m3fn, float6_e3m2fn, int1 or uint1 at all
(it fails at run time), nor with a few other (type, op) pairs listed in the golden file as
errors of JaxRuntimeError / lowering: corejax computes those with ml_dtypes' NumPy casts and
loops, which no JAX result checks; the tests below only check that they run.
"""
import json
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import dtypes, lax, nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
import ml_dtypes_cases as mc  # noqa: E402

with open(os.path.join(HERE, "golden", "ml_dtypes.json")) as _fh:
    GOLDEN = json.load(_fh)
with np.load(os.path.join(HERE, "golden", "ml_dtypes.npz")) as _npz:
    BITS = {k: _npz[k] for k in _npz.files}
ENTRIES = GOLDEN["entries"]

# XLA's CPU backend has no kernels for these (JaxRuntimeError / a lowering error): JAX raises
# where corejax computes, so there is no JAX result to compare with.
BACKEND_ERRORS = ("JaxRuntimeError",)
# Types JAX's CPU backend cannot compute with at all: it cannot make arrays of them (float6,
# int1, uint1), and its int1 results come back to the host as bools. Every entry involving
# them is checked only for running (or refusing with TypeError, JAX's refusal of an op).
NO_ORACLE = {"float6_e2m3fn", "float6_e3m2fn", "int1", "uint1"}


def _wrap(values, t):
    return np.asarray(values).astype(np.int64).astype(mc.dtype(t))


def _pairs(pair):
    n = len(pair)
    return np.repeat(pair, n), np.tile(pair, n)


def _int_power(pair, t):
    """a ** b for b >= 0, wrapped (the other pairs are masked out: None)."""
    a, b = (x.astype(np.int64) for x in _pairs(pair))
    return _wrap(np.power(a, np.maximum(b, 0)), t), b >= 0


def _logical_right_shift(pair, t):
    a, b = (x.astype(np.int64) for x in _pairs(pair))
    bits = corejax.dtypes.itemsize_bits(t)
    return _wrap(np.where(b >= bits, 0, a >> np.minimum(b, bits - 1)), t), None


def _wide_int_reduction(op):
    def ref(matrix, t):
        m = matrix[:16].reshape(4, 4).astype(np.int64)
        wide = np.int32 if t.startswith("int") else np.uint32
        out = {"sum": lambda: m.sum(), "sum_axis0": lambda: m.sum(0),
               "prod": lambda: m[:2].prod(0)}[op]()
        return np.asarray(out).astype(wide), None
    return ref


def _e8m0_reduction(op):
    def ref(matrix, t):
        m = matrix[:16].reshape(4, 4)
        f = m.astype(np.float32)
        if op == "argmax":
            return np.argmax(f, axis=0).astype(np.int32), None
        if op == "cumsum":  # summed in order, each partial sum rounded (as every other type's)
            out = m.copy()
            for j in range(1, 4):
                out[:, j] = (out[:, j - 1].astype(np.float32) + f[:, j]).astype(m.dtype)
            return out, None
        return {"max": f.max(axis=1), "min": f.min()}[op].astype(m.dtype), None
    return ref


# Where JAX 0.10.2 fails by accident (its own bugs, not rules of its API), corejax computes what
# the operation means, checked against NumPy on a wide type instead of JAX:
# key -> (what JAX does, reference(operands, type) -> (expected, mask of the checked elements))
JAX_ACCIDENTS = {
    **{f"binary/{t}/power": ("ValueError: jnp.power calls np.iinfo, which rejects ml_dtypes' "
                             "int4", lambda pair, t: _int_power(pair, t))
       for t in ("int2", "int4", "uint2", "uint4")},
    **{f"binary/{t}/right_shift": ("shifts arithmetically (np.issubdtype does not see uint4 as "
                                   "unsigned)", _logical_right_shift) for t in ("uint2", "uint4")},
    **{f"reduce/{t}/{op}": ("ValueError: the integer promotion of sum / prod calls np.iinfo, "
                            "which rejects ml_dtypes' int4 (corejax sums in int32 / uint32, "
                            "as JAX does for int8)", _wide_int_reduction(op))
       for t in ("int2", "int4", "uint2", "uint4") for op in ("sum", "sum_axis0", "prod")},
    "binary/float8_e8m0fnu/nextafter": (
        "steps the bits as if the type had a sign bit (nextafter(1, 2) is 0.5)",
        lambda pair, t: (np.nextafter(*_pairs(pair)), None)),
    **{f"reduce/float8_e8m0fnu/{op}": (
        "NaN: the reduction's identity (-inf, +inf, 0) does not exist in float8_e8m0fnu",
        _e8m0_reduction(op)) for op in ("max", "min", "argmax", "cumsum")},
}


class FW:
    numpy, lax, nn, jit = jnp, lax, corejax.nn, corejax.jit


def golden(key):
    """JAX's array for `key` (from its recorded bits), or the name of the exception it raised."""
    e = ENTRIES[key]
    if "error" in e:
        return e["error"]
    dt = np.dtype(e["dtype"])
    width = mc.bits_of(np.zeros(1, dt)).dtype.str[1:]
    count = (int(np.prod(e["shape"])) if e["shape"] else 1) * (2 if dt.kind == "c" else 1)
    return BITS[width][e["offset"]:e["offset"] + count].view(dt).reshape(e["shape"])


def same(got, expected):
    """Equal dtypes, shapes and bits (any NaN equals any NaN)."""
    got = np.asarray(got)
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return False
    gb, eb = mc.bits_of(got), mc.bits_of(expected)
    if dtypes.is_inexact(got.dtype):
        nan_g = np.isnan(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64))
        nan_e = np.isnan(expected.astype(np.complex128 if got.dtype.kind == "c" else np.float64))
        if got.dtype.kind == "c":
            return np.array_equal(nan_g, nan_e) and np.array_equal(
                np.where(np.repeat(nan_g, 2), 0, gb.reshape(-1)),
                np.where(np.repeat(nan_e, 2), 0, eb.reshape(-1)))
        return np.array_equal(nan_g, nan_e) and np.array_equal(gb[~nan_g], eb[~nan_e])
    return np.array_equal(gb, eb)


def check(key, fn, *args):
    """fn(*args) eagerly and under jit against JAX's entry: the problems found, as strings."""
    expected = golden(key)
    unchecked = bool(NO_ORACLE & set(key.split("/")))
    mask = None
    if key in JAX_ACCIDENTS:
        expected, mask = JAX_ACCIDENTS[key][1](np.asarray(args[0]), key.split("/")[1])
    problems = []
    for mode, f in (("eager", fn), ("jit", corejax.jit(fn))):
        try:
            got = np.asarray(f(*[jnp.asarray(a) for a in args]))
        except Exception as e:  # noqa: BLE001
            if unchecked:
                if not isinstance(e, (TypeError, NotImplementedError)):  # JAX's refusals
                    problems.append(f"{key} {mode}: raised {type(e).__name__}: {e}")
            elif isinstance(expected, str):
                if expected not in [t.__name__ for t in type(e).__mro__]:
                    problems.append(f"{key} {mode}: raised {type(e).__name__} where JAX raised "
                                    f"{expected}")
            else:
                problems.append(f"{key} {mode}: raised {type(e).__name__}: {e}")
            continue
        if unchecked:
            continue
        if isinstance(expected, str):
            if expected not in BACKEND_ERRORS:
                problems.append(f"{key} {mode}: returned {got.dtype} where JAX raised {expected}")
        elif not (same(got, expected) if mask is None else
                  got.dtype == expected.dtype and same(got[mask], expected[mask])):
            problems.append(f"{key} {mode}: got {got!r}, expected {expected!r}")
    return problems


def source(name):
    return golden(f"src/{name}")


X32 = mc.STANDARD_X32 + mc.ML


@pytest.mark.parametrize("name", X32)
def test_sources_made_like_jax(name):
    """The cast sources (float32 / int64 values cast by the framework) are JAX's bits."""
    expected = source(name)
    assert same(mc.source_values(name, FW), expected), name


@pytest.mark.filterwarnings("ignore:Casting from complex:DeprecationWarning")
@pytest.mark.parametrize("src", X32)
def test_casts_match_jax(src):
    x = source(src)
    problems = []
    for dst in X32:
        problems += check(f"cast/{src}/{dst}", lambda v, d=dst: v.astype(d), x)
    assert not problems, "\n".join(problems)


@pytest.fixture
def x64():
    saved = corejax.config.enable_x64
    corejax.config.update("jax_enable_x64", True)
    yield
    corejax.config.update("jax_enable_x64", saved)


def test_casts_to_and_from_64_bit_types(x64):
    problems = []
    for src in mc.STANDARD_X64:
        for dst in mc.ML:
            problems += check(f"cast/{src}/{dst}", lambda v, d=dst: v.astype(d), source(src))
    for src in mc.ML:
        for dst in mc.STANDARD_X64:
            problems += check(f"cast64/{src}/{dst}", lambda v, d=dst: v.astype(d), source(src))
    assert not problems, "\n".join(problems)


def _ops(t):
    if t in mc.ML_INTS:
        return mc.INT_UNARY, mc.INT_BINARY, mc.INT_REDUCTIONS
    return mc.UNARY, mc.BINARY, mc.REDUCTIONS


@pytest.mark.parametrize("t", mc.ML)
def test_unary_ops_match_jax(t):
    single, _, _ = mc.operands(t, source(t))
    problems = []
    for op in _ops(t)[0]:
        problems += check(f"unary/{t}/{op}", lambda v, op=op: mc.unary(FW, op, v), single)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("t", mc.ML)
def test_binary_ops_match_jax(t):
    _, pair, _ = mc.operands(t, source(t))
    problems = []
    for op in _ops(t)[1]:
        problems += check(f"binary/{t}/{op}", lambda a, b, op=op: mc.binary(FW, op, a, b),
                          pair, pair)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("t", mc.ML)
def test_reductions_match_jax(t):
    _, _, matrix = mc.operands(t, source(t))
    problems = []
    for op in _ops(t)[2]:
        problems += check(f"reduce/{t}/{op}", lambda v, op=op: mc.reduction(FW, op, v), matrix)
    assert not problems, "\n".join(problems)


def test_jax_accidents_are_still_there():
    """The golden entries JAX_ACCIDENTS replaces still show JAX's accident (regenerating with
    a JAX that fixed one makes this fail: then its entry goes)."""
    fixed = []
    for key in JAX_ACCIDENTS:
        t = key.split("/")[1]
        expected = golden(key)
        if isinstance(expected, str):
            continue
        ref, mask = JAX_ACCIDENTS[key][1](mc.operands(t, source(t))[1 if key.startswith(
            "binary") else 2], t)
        if same(expected, ref):
            fixed.append(key)
    assert not fixed


def test_jax_backend_gaps_are_the_known_ones():
    """The types JAX's CPU backend cannot make at all (so corejax is checked against nothing
    for them): float6 and the 1-bit integers."""
    assert set(GOLDEN["source_errors"]) == {"float6_e2m3fn", "float6_e3m2fn", "int1", "uint1"}


def _info_value(v):
    if isinstance(v, np.dtype):
        return v.name
    v = np.asarray(v)
    return float(v.astype(np.float64)) if v.dtype.kind not in "iu" else int(v)


@pytest.mark.parametrize("t", mc.ML_FLOATS)
def test_finfo_matches_jax(t):
    info = jnp.finfo(t)
    for field, expected in GOLDEN["finfo"][t].items():
        got = _info_value(getattr(info, field))
        assert got == expected, f"finfo({t}).{field}: {got} != JAX's {expected}"
    assert jnp.finfo(getattr(jnp, t)).bits == GOLDEN["finfo"][t]["bits"]


@pytest.mark.parametrize("t", mc.ML_INTS)
def test_iinfo_matches_jax(t):
    info = jnp.iinfo(t)
    for field, expected in GOLDEN["iinfo"][t].items():
        got = getattr(info, field)
        got = got.name if isinstance(got, np.dtype) else got
        assert got == expected, f"iinfo({t}).{field}: {got} != JAX's {expected}"


def test_issubdtype_matches_jax():
    names = mc.STANDARD_X32 + mc.STANDARD_X64 + mc.ML
    others = [getattr(np, b) for b in mc.ABSTRACT] + names
    wrong = [(a, b) for a in names for b, other in zip(mc.ABSTRACT + names, others)
             if jnp.issubdtype(a, other) != GOLDEN["issubdtype"][a][b]]
    wrong += [(a, b) for a in mc.ML for b in mc.ABSTRACT
              if jnp.issubdtype(getattr(jnp, a), getattr(np, b))
              != GOLDEN["issubdtype_scalar_types"][a][b]]
    assert not wrong


def test_can_cast_isdtype_itemsize_bits_match_jax():
    names = mc.STANDARD_X32 + mc.STANDARD_X64 + mc.ML
    wrong = [("can_cast", a, b) for a in names for b in names
             if jnp.can_cast(a, b) != GOLDEN["can_cast"][a][b]]
    wrong += [("isdtype", a, k) for a in names for k in mc.ISDTYPE_KINDS
              if jnp.isdtype(a, k) != GOLDEN["isdtype"][a][k]]
    wrong += [("itemsize_bits", a) for a, bits in GOLDEN["itemsize_bits"].items()
              if corejax.dtypes.itemsize_bits(a) != bits]
    assert not wrong


def test_scalar_types_are_dtypes_and_functions():
    for t in mc.ML:
        st = getattr(jnp, t)
        assert np.dtype(st) == np.dtype(t) and jnp.dtype(t) == np.dtype(t)
        assert repr(st) == f"<class 'corejax.numpy.{t}'>"
    x = jnp.bfloat16(1.5)
    assert x.dtype == np.dtype("bfloat16") and x.shape == () and not x.weak_type
    assert corejax.dtypes.bfloat16 == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("t", sorted(NO_ORACLE))
def test_casts_of_types_without_jax_oracle(t):
    """JAX's CPU backend cannot make arrays of float6 / int1 / uint1, so no JAX result exists
    for them. Their casts are held to the rules JAX follows for the narrow types it can make:
    float to float6 and integer to int1 / uint1 as ml_dtypes converts (round to nearest even,
    overflow, infinities, NaN; wrap-around), as JAX's casts to float8 / float4 and int2 / int4
    do; float to int1 / uint1 truncated and saturated, NaN to 0, as JAX's float to int2 / int4
    (not ml_dtypes', which wraps). Eagerly and under jit, and back to float32 exactly."""
    dt = np.dtype(getattr(ml_dtypes, t))
    floats = np.array([0, 0.1, -0.3, 0.5, 1.2, 1.7, 3.3, 7.5, 7.6, 8.0, 28.0, 30.0, 100.0,
                       -1e9, np.inf, -np.inf, np.nan, 1e-8, -0.0, 0.126, 0.124], np.float32)
    ints = np.array([-3, -2, -1, 0, 1, 2, 3, 127, -128, 255], np.int32)
    info = ml_dtypes.iinfo(dt) if t.endswith("int1") else None
    with np.errstate(all="ignore"):
        cases = [(ints, ints.astype(dt)) if info else (floats, floats.astype(dt))]
        if info:
            saturated = np.clip(np.trunc(np.nan_to_num(floats, nan=0.0)), info.min, info.max)
            cases.append((floats, saturated.astype(np.int32).astype(dt)))
    for src, want in cases:
        for mode, f in (("eager", lambda v: v.astype(dt)),
                        ("jit", corejax.jit(lambda v: v.astype(dt)))):
            got = np.asarray(f(jnp.asarray(src)))
            assert got.dtype == dt, (t, mode, got.dtype)
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8),
                                          err_msg=f"{t} {mode} from {src.dtype}")
        back = np.asarray(jnp.asarray(want).astype(np.float32))
        np.testing.assert_array_equal(back, want.astype(np.float32), err_msg=f"{t} back")

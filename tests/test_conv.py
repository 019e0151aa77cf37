"""conv_general_dilated and the reduce_window family: values against naive NumPy loops, and every
rule (jvp, transpose, batching) against finite differences, the dot-product test and stacking."""
import itertools

import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import lax
from corejax.lax.conv import (ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated,
                              conv_transpose, padtype_to_pads)
from corejax.lax.windowed import (reduce_window, reduce_window_max, reduce_window_min,
                                  reduce_window_sum)


# --- naive references ------------------------------------------------------------------------

def _pad_dilate(x, pads, dilation, fill, first_spatial):
    """x with spatial axes (from `first_spatial` on) dilated and padded (negative pads crop)."""
    nsp = len(pads)
    lead = x.shape[:first_spatial]
    shape = lead + tuple((n - 1) * d + 1 for n, d in zip(x.shape[first_spatial:], dilation))
    out = np.full(shape, fill, np.float64)
    out[(slice(None),) * first_spatial + tuple(slice(None, None, d) for d in dilation)] = x
    for i, (lo, hi) in enumerate(pads):
        ax = first_spatial + i
        n = out.shape[ax]
        grown = np.full(out.shape[:ax] + (n + max(lo, 0) + max(hi, 0),) + out.shape[ax + 1:],
                        fill)
        idx = [slice(None)] * out.ndim
        idx[ax] = slice(max(lo, 0), max(lo, 0) + n)
        grown[tuple(idx)] = out
        idx[ax] = slice(-min(lo, 0), grown.shape[ax] + min(hi, 0))
        out = grown[tuple(idx)]
    assert nsp == out.ndim - first_spatial
    return out


def naive_conv(lhs, rhs, strides, pads, lhs_dil, rhs_dil, dnums, groups=1, batch_groups=1):
    x = np.transpose(lhs, dnums.lhs_spec).astype(np.float64)
    w = np.transpose(rhs, dnums.rhs_spec).astype(np.float64)
    n, _, *_ = x.shape
    o, i, *ks = w.shape
    xp = _pad_dilate(x, pads, lhs_dil, 0.0, 2)
    out_sp = [max(0, (xp.shape[2 + d] - ((ks[d] - 1) * rhs_dil[d] + 1)) // strides[d] + 1)
              for d in range(len(ks))]
    nb = n // batch_groups
    out = np.zeros([nb, o] + out_sp)
    for b, oc in itertools.product(range(nb), range(o)):
        g, bg = oc // (o // groups), oc // (o // batch_groups)
        for pos in itertools.product(*map(range, out_sp)):
            acc = 0.0
            for c, k in itertools.product(range(i), itertools.product(*map(range, ks))):
                where = tuple(p * s + t * r for p, s, t, r in zip(pos, strides, k, rhs_dil))
                acc += xp[(b + bg * nb, g * i + c) + where] * w[(oc, c) + k]
            out[(b, oc) + pos] = acc
    return np.transpose(out, np.argsort(dnums.out_spec))


def naive_window(x, kind, dims, strides, pads, base_dil, win_dil):
    init, op = {"sum": (0.0, np.add), "max": (-np.inf, np.maximum),
                "min": (np.inf, np.minimum)}[kind]
    xp = _pad_dilate(x, pads, base_dil, init, 0)
    out_sp = [(xp.shape[d] - ((dims[d] - 1) * win_dil[d] + 1)) // strides[d] + 1
              for d in range(x.ndim)]
    out = np.full(out_sp, init)
    for pos in itertools.product(*map(range, out_sp)):
        for k in itertools.product(*map(range, dims)):
            out[pos] = op(out[pos], xp[tuple(p * s + t * r for p, s, t, r in
                                             zip(pos, strides, k, win_dil))])
    return out


# (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, dimension numbers,
#  feature_group_count, batch_group_count)
CONV_CASES = {
    "nchw-plain": ((2, 3, 5, 6), (4, 3, 3, 2), (1, 1), "VALID", None, None, None, 1, 1),
    "nhwc-same-stride": ((2, 7, 6, 3), (3, 3, 3, 4), (2, 2), "SAME", None, None,
                         ("NHWC", "HWIO", "NHWC"), 1, 1),
    "same-lower": ((1, 6, 5, 2), (2, 3, 2, 2), (2, 1), "SAME_LOWER", None, None,
                   ("NHWC", "HWIO", "NHWC"), 1, 1),
    "explicit-negative-dilated": ((2, 5, 6, 4), (3, 2, 4, 5), (2, 1), [(1, 2), (-1, 1)], (1, 2),
                                  (2, 1), ("NHWC", "HWIO", "NHWC"), 1, 1),
    "feature-groups": ((2, 5, 6, 4), (3, 2, 2, 6), (2, 1), [(1, 2), (0, 1)], (2, 1), (1, 2),
                       ("NHWC", "HWIO", "NHWC"), 2, 1),
    "depthwise-1d": ((2, 8, 3), (3, 1, 6), (2,), [(1, 0)], None, None, ("NWC", "WIO", "NWC"),
                     3, 1),
    "batch-groups-mixed-layout": ((4, 5, 6, 3), (3, 2, 3, 6), (1, 2), [(1, 2), (0, 1)], None,
                                  (1, 2), ("NHWC", "HWIO", "NCHW"), 1, 2),
    "1d-rhs-dilation": ((2, 7, 3), (3, 3, 4), (3,), [(1, 1)], None, (2,),
                        ("NWC", "WIO", "NWC"), 1, 1),
    "3d": ((1, 4, 3, 5, 2), (2, 2, 2, 2, 3), (1, 2, 1), "SAME", None, None,
           ("NDHWC", "DHWIO", "NDHWC"), 1, 1),
    "window-larger-than-input": ((1, 2, 2, 1), (3, 3, 1, 1), (1, 1), "VALID", None, None,
                                 ("NHWC", "HWIO", "NHWC"), 1, 1),
}


def _conv_fn(case):
    _, _, strides, padding, ld, rd, dn, g, b = case
    return lambda x, w: conv_general_dilated(x, w, strides, padding, ld, rd, dn, g, b)


def _explicit_pads(case):
    lshape, rshape, strides, padding, ld, rd, dn, _, _ = case
    dnums = conv_dimension_numbers(lshape, rshape, dn)
    if not isinstance(padding, str):
        return dnums, padding
    ks = [rshape[i] for i in dnums.rhs_spec[2:]]
    rd = rd or (1,) * len(ks)
    return dnums, padtype_to_pads([lshape[i] for i in dnums.lhs_spec[2:]],
                                  [(k - 1) * r + 1 for k, r in zip(ks, rd)], strides, padding)


@pytest.mark.parametrize("name", CONV_CASES)
def test_conv_matches_naive_loops(name, rng):
    case = CONV_CASES[name]
    lshape, rshape, strides, _, ld, rd, _, g, b = case
    x = rng.standard_normal(lshape).astype(np.float32)
    w = rng.standard_normal(rshape).astype(np.float32)
    y = _conv_fn(case)(x, w)
    dnums, pads = _explicit_pads(case)
    nsp = len(lshape) - 2
    ref = naive_conv(x, w, strides, pads, ld or (1,) * nsp, rd or (1,) * nsp, dnums, g, b)
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", CONV_CASES)
def test_conv_jvp_vjp_and_finite_differences(name, rng, x64):
    case = CONV_CASES[name]
    f = _conv_fn(case)
    x, w = rng.standard_normal(case[0]), rng.standard_normal(case[1])
    tx, tw = rng.standard_normal(case[0]), rng.standard_normal(case[1])
    y, f_vjp = corejax.vjp(f, x, w)
    ct = rng.standard_normal(y.shape)
    gx, gw = f_vjp(ct)
    _, ty = corejax.jvp(f, (x, w), (tx, tw))
    # <J t, ct> == <t, J^T ct>: the transpose rules are the exact adjoints of the jvp.
    np.testing.assert_allclose(np.sum(np.asarray(ty) * ct),
                               np.sum(np.asarray(gx) * tx) + np.sum(np.asarray(gw) * tw),
                               rtol=1e-10, atol=1e-10)
    eps = 1e-6
    fd = (np.asarray(f(x + eps * tx, w + eps * tw))
          - np.asarray(f(x - eps * tx, w - eps * tw))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(ty), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["nhwc-same-stride", "feature-groups",
                                  "batch-groups-mixed-layout"])
def test_conv_second_order_finite_differences(name, rng, x64):
    f = _conv_fn(CONV_CASES[name])
    x, w = rng.standard_normal(CONV_CASES[name][0]), rng.standard_normal(CONV_CASES[name][1])
    inner = lambda x, w: jnp.sum(corejax.grad(lambda w: jnp.sum(jnp.tanh(f(x, w))))(w) ** 2)
    g = corejax.grad(inner)(x, w)
    t = rng.standard_normal(x.shape)
    eps = 1e-5
    fd = (float(inner(x + eps * t, w)) - float(inner(x - eps * t, w))) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(g) * t), fd, rtol=1e-6)


@pytest.mark.parametrize("name", ["nchw-plain", "feature-groups", "depthwise-1d",
                                  "batch-groups-mixed-layout"])
@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (2, 1)])
def test_conv_vmap_matches_stacking(name, in_axes, rng):
    case = CONV_CASES[name]
    f = _conv_fn(case)
    x, w = rng.standard_normal(case[0]), rng.standard_normal(case[1])
    xs = np.stack([x + i for i in range(3)], in_axes[0]) if in_axes[0] is not None else x
    ws = np.stack([w * (i + 1) for i in range(3)], in_axes[1]) if in_axes[1] is not None else w
    out = corejax.vmap(f, in_axes=in_axes)(xs.astype(np.float32), ws.astype(np.float32))
    pick = lambda a, ax, i: a if ax is None else np.take(a, i, axis=ax)
    ref = np.stack([np.asarray(f(pick(xs, in_axes[0], i).astype(np.float32),
                                 pick(ws, in_axes[1], i).astype(np.float32))) for i in range(3)])
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-4)


def test_conv_vmap_of_grad(rng):
    f = _conv_fn(CONV_CASES["feature-groups"])
    xs = rng.standard_normal((3,) + CONV_CASES["feature-groups"][0]).astype(np.float32)
    w = rng.standard_normal(CONV_CASES["feature-groups"][1]).astype(np.float32)
    loss = lambda x, w: jnp.sum(f(x, w) ** 2)
    out = corejax.vmap(corejax.grad(loss, argnums=1), in_axes=(0, None))(xs, w)
    ref = np.stack([np.asarray(corejax.grad(loss, argnums=1)(x, w)) for x in xs])
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-3)


def test_conv_under_jit_and_jaxpr(rng):
    f = _conv_fn(CONV_CASES["nhwc-same-stride"])
    x = rng.standard_normal(CONV_CASES["nhwc-same-stride"][0]).astype(np.float32)
    w = rng.standard_normal(CONV_CASES["nhwc-same-stride"][1]).astype(np.float32)
    np.testing.assert_allclose(np.asarray(corejax.jit(f)(x, w)), np.asarray(f(x, w)), rtol=1e-6)
    loss = lambda x, w: jnp.sum(f(x, w) ** 2)
    g = corejax.jit(corejax.grad(loss, argnums=(0, 1)))(x, w)
    g_ref = corejax.grad(loss, argnums=(0, 1))(x, w)
    for a, b in zip(g, g_ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
    assert "conv_general_dilated" in str(corejax.make_jaxpr(f)(x, w))


def test_dimension_numbers():
    dn = conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    assert dn == ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert conv_dimension_numbers((1, 3, 5, 5), (8, 3, 3, 3), None) == \
        ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    assert conv_dimension_numbers((1, 3, 5, 5), (8, 3, 3, 3), dn) == dn
    with pytest.raises(ValueError, match="spatial"):
        conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HXIO", "NHWC"))
    with pytest.raises(TypeError, match="length"):
        conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHC", "HWIO", "NHWC"))


def test_conv_errors_name_shapes():
    x, w = jnp.ones((1, 5, 5, 3)), jnp.ones((3, 3, 4, 8))
    dn = ("NHWC", "HWIO", "NHWC")
    # feature-size mismatches are ValueError in JAX 0.10.2
    with pytest.raises(ValueError, match=r"\(1, 5, 5, 3\).*\(3, 3, 4, 8\)"):
        conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    with pytest.raises(TypeError, match="same rank"):
        conv_general_dilated(x, jnp.ones((3, 3, 8)), (1, 1), "SAME")
    with pytest.raises(ValueError, match="feature_group_count"):
        conv_general_dilated(x, jnp.ones((3, 3, 1, 8)), (1, 1), "SAME", dimension_numbers=dn,
                             feature_group_count=2)
    with pytest.raises(ValueError, match="window_strides"):
        conv_general_dilated(x, jnp.ones((3, 3, 3, 8)), (1, 1, 1), "SAME", dimension_numbers=dn)
    with pytest.raises(ValueError, match="padding"):
        conv_general_dilated(x, jnp.ones((3, 3, 3, 8)), (1, 1), "FULL", dimension_numbers=dn)
    with pytest.raises(TypeError, match="same dtype"):
        conv_general_dilated(x, jnp.ones((3, 3, 3, 8), jnp.int32), (1, 1), "SAME",
                             dimension_numbers=dn)


def test_conv_preferred_element_type_and_ints():
    x = np.arange(2 * 4 * 4 * 1, dtype=np.int32).reshape(2, 4, 4, 1)
    w = np.ones((2, 2, 1, 1), np.int32)
    y = conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert y.dtype == np.int32 and int(y[0, 0, 0, 0]) == 0 + 1 + 4 + 5
    y16 = conv_general_dilated(x.astype(np.float16), w.astype(np.float16), (1, 1), "VALID",
                               dimension_numbers=("NHWC", "HWIO", "NHWC"),
                               preferred_element_type=np.float32)
    assert y16.dtype == np.float32
    x16, w16 = np.cos(np.arange(2 * 4 * 4)).reshape(2, 4, 4, 1), np.ones((2, 2, 1, 3))
    loss = lambda x, w: jnp.sum(conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        preferred_element_type=np.float32) ** 2)
    g16 = corejax.grad(loss, argnums=(0, 1))(x16.astype(np.float16), w16.astype(np.float16))
    g32 = corejax.grad(loss, argnums=(0, 1))(x16.astype(np.float32), w16.astype(np.float32))
    for a, b in zip(g16, g32):
        assert a.dtype == np.float16
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b), rtol=1e-2, atol=1e-2)


def test_conv_transpose_shapes_and_adjointness(rng):
    x = rng.standard_normal((2, 4, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 6)).astype(np.float32)
    assert conv_transpose(x, w, (2, 2), "SAME").shape == (2, 8, 10, 6)
    assert conv_transpose(x, w, (2, 2), "VALID").shape == (2, 9, 11, 6)
    # With the kernel transposed, conv_transpose is the gradient of a strided SAME conv.
    y_shape = (2, 8, 10, 3)
    conv = lambda y: conv_general_dilated(y, w, (2, 2), "SAME",
                                          dimension_numbers=("NHWC", "HWIO", "NHWC"))
    ct = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    (grad,) = corejax.vjp(conv, np.zeros(y_shape, np.float32))[1](ct)
    t = conv_transpose(ct, w, (2, 2), "SAME", transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(t), np.asarray(grad), rtol=1e-4, atol=1e-4)


# --- reduce_window ---------------------------------------------------------------------------

WINDOW_CASES = {
    "pool-2x2": ((2, 6, 7, 3), (1, 2, 2, 1), (1, 2, 2, 1), "VALID", None, None),
    "pool-3x3-same": ((2, 5, 5, 2), (1, 3, 3, 1), (1, 2, 2, 1), "SAME", None, None),
    "explicit-pads": ((2, 6, 7, 3), (1, 3, 3, 1), (1, 2, 1, 1), [(0, 0), (1, 1), (2, 0), (0, 0)],
                      None, None),
    "dilations": ((5, 8), (2, 3), (1, 2), [(1, 0), (0, 2)], (2, 1), (1, 2)),
    "1d-window-dilation": ((9,), (3,), (2,), [(1, 1)], None, (2,)),
}
KINDS = {"sum": reduce_window_sum, "max": reduce_window_max, "min": reduce_window_min}


def _window_fn(kind, case):
    _, dims, strides, padding, bd, wd = case
    return lambda x: KINDS[kind](x, dims, strides, padding, bd, wd)


def _window_pads(case):
    shape, dims, strides, padding, bd, wd = case
    bd, wd = bd or (1,) * len(shape), wd or (1,) * len(shape)
    if isinstance(padding, str):
        padding = padtype_to_pads([(n - 1) * b + 1 for n, b in zip(shape, bd)],
                                  [(k - 1) * r + 1 for k, r in zip(dims, wd)], strides, padding)
    return padding, bd, wd


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", WINDOW_CASES)
def test_reduce_window_matches_naive(kind, name, rng):
    case = WINDOW_CASES[name]
    x = rng.standard_normal(case[0]).astype(np.float32)
    pads, bd, wd = _window_pads(case)
    ref = naive_window(x, kind, case[1], case[2], pads, bd, wd)
    np.testing.assert_allclose(np.asarray(_window_fn(kind, case)(x)), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_reduce_window_loop_is_the_strided_views(dtype, rng, monkeypatch, x64):
    """The compiled loop (windows over one or two dimensions) gives what combining one strided
    view of the padded operand per tap gives (the form kept for other operands): the same
    values tap for tap, NaN where a window holds one, padding and base-dilation holes as the
    identity (array_equal counts -0.0 and +0.0 as equal: np.maximum's vector loops may
    return either zero of a tie)."""
    from corejax.lax import windowed
    shapes = [(3, 7, 6, 4), (2, 5, 3, 9, 2), (11,), (4, 6)]
    checked = 0
    for trial in range(48):
        shape = shapes[trial % len(shapes)]
        nd = len(shape)
        moving = rng.choice(nd, min(nd, 1 + trial % 2), replace=False)
        dims, strides, bd, wd = ([1] * nd for _ in range(4))
        pads = [(0, 0)] * nd
        for i in moving:
            dims[i], strides[i] = int(rng.integers(1, 4)), int(rng.integers(1, 3))
            bd[i], wd[i] = int(rng.integers(1, 3)), int(rng.integers(1, 3))
            pads[i] = tuple(int(v) for v in rng.integers(-1, 3, 2))
        if np.dtype(dtype).kind == "f":
            x = rng.standard_normal(shape).astype(dtype)
            x[rng.random(shape) < 0.1] = np.nan
            x[rng.random(shape) < 0.1] = -0.0
        else:
            x = rng.integers(0, 200, shape).astype(dtype)
        for kind in KINDS:
            try:
                looped = KINDS[kind](x, dims, strides, pads, bd, wd)
            except (TypeError, ValueError):     # an invalid window
                continue
            with monkeypatch.context() as m:
                m.setattr(windowed, "_looped", lambda *a, **k: None)
                views = KINDS[kind](x, dims, strides, pads, bd, wd)
            assert looped.dtype == views.dtype
            np.testing.assert_array_equal(np.asarray(looped), np.asarray(views))
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", WINDOW_CASES)
def test_reduce_window_rules(kind, name, rng, x64):
    case = WINDOW_CASES[name]
    f = _window_fn(kind, case)
    x, t = rng.standard_normal(case[0]), rng.standard_normal(case[0])
    y, f_vjp = corejax.vjp(f, x)
    ct = rng.standard_normal(y.shape)
    (gx,) = f_vjp(ct)
    _, ty = corejax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(np.sum(np.asarray(ty) * ct), np.sum(np.asarray(gx) * t),
                               rtol=1e-10, atol=1e-10)
    eps = 1e-6
    fd = (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(ty), fd, rtol=1e-6, atol=1e-7)
    xs = np.stack([x, 2 * x, -x], axis=0)
    np.testing.assert_allclose(np.asarray(corejax.vmap(f)(xs)),
                               np.stack([np.asarray(f(a)) for a in xs]), rtol=1e-12)
    loss = lambda x: jnp.sum(f(x) ** 2)
    np.testing.assert_allclose(np.asarray(corejax.vmap(corejax.grad(loss), in_axes=1,
                                                       out_axes=1)(np.moveaxis(xs, 0, 1))),
                               np.stack([np.asarray(corejax.grad(loss)(a)) for a in xs], 1),
                               rtol=1e-12)


def test_reduce_window_sum_second_order(rng, x64):
    f = _window_fn("sum", WINDOW_CASES["dilations"])
    x = rng.standard_normal(WINDOW_CASES["dilations"][0])
    hess_vec = corejax.jvp(corejax.grad(lambda x: jnp.sum(f(x) ** 3)), (x,), (np.ones_like(x),))[1]
    eps = 1e-5
    g = corejax.grad(lambda x: jnp.sum(f(x) ** 3))
    fd = (np.asarray(g(x + eps)) - np.asarray(g(x - eps))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(hess_vec), fd, rtol=1e-6, atol=1e-6)


def test_max_window_ties_send_gradient_to_first_max():
    x = jnp.array([[1.0, 1.0, 0.0], [1.0, 0.0, 2.0]])
    g = corejax.grad(lambda x: jnp.sum(reduce_window_max(x, (2, 2), (1, 1), "VALID")))(x)
    np.testing.assert_array_equal(np.asarray(g), [[1, 0, 0], [0, 0, 1]])
    g = corejax.grad(lambda x: jnp.sum(reduce_window_min(-x, (2, 2), (1, 1), "VALID")))(x)
    np.testing.assert_array_equal(np.asarray(g), [[-1, 0, 0], [0, 0, -1]])


# Layouts of the single-GEMM path (lax/_conv_gemm.py): features inside the batch axis (rows
# gathered), the batch inside the features (columns gathered: a kernel gradient's layout), both
# with strides, both dilations, negative and positive padding, one and two spatial dimensions.
GEMM_LAYOUTS = [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"), ("CHWN", "HWIO", "HWNC"),
                ("HWCN", "IOHW", "NCHW"), ("NWC", "WIO", "NWC"), ("CWN", "OIW", "WNC")]


@pytest.mark.parametrize("layout", GEMM_LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_conv_gemm_path_matches_naive_loops(layout, dtype, rng, x64):
    from corejax.lax import _conv_gemm
    nsp = len(layout[0]) - 2
    for _ in range(4):
        n, c, o = (int(v) for v in rng.integers(1, 4, 3))
        sizes = [int(v) for v in rng.integers(3, 8, nsp)]
        ks = [int(v) for v in rng.integers(1, 4, nsp)]
        strides = tuple(int(v) for v in rng.integers(1, 3, nsp))
        ld = tuple(int(v) for v in rng.integers(1, 3, nsp))
        rd = tuple(int(v) for v in rng.integers(1, 3, nsp))
        pads = [(int(a), int(b)) for a, b in rng.integers(-1, 3, (nsp, 2))]
        dnums = conv_dimension_numbers((0,) * (nsp + 2), (0,) * (nsp + 2), layout)
        lshape = [0] * (nsp + 2)
        for axis, size in zip(dnums.lhs_spec, [n, c] + sizes):
            lshape[axis] = size
        rshape = [0] * (nsp + 2)
        for axis, size in zip(dnums.rhs_spec, [o, c] + ks):
            rshape[axis] = size
        x = rng.standard_normal(lshape).astype(dtype)
        w = rng.standard_normal(rshape).astype(dtype)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(lshape).astype(dtype)
        params = dict(window_strides=strides, padding=tuple(pads), lhs_dilation=ld,
                      rhs_dilation=rd, dimension_numbers=dnums, feature_group_count=1,
                      batch_group_count=1)
        ref = naive_conv(x.real, w.real, strides, pads, ld, rd, dnums)
        if np.dtype(dtype).kind == "c":    # w real: conv(xr + i xi, w) = conv(xr, w) + i ...
            ref = ref + 1j * naive_conv(x.imag, w.real, strides, pads, ld, rd, dnums)
        if 0 in ref.shape:
            continue
        assert _conv_gemm.gemm_form(x, w, **params) is not None
        y = conv_general_dilated(x, w, strides, pads, ld, rd, layout)
        assert y.shape == ref.shape and y.dtype == dtype
        tol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(np.asarray(y), ref, rtol=tol, atol=tol)
        jitted = corejax.jit(lambda a, b: conv_general_dilated(a, b, strides, pads, ld, rd,
                                                               layout))(x, w)
        np.testing.assert_array_equal(np.asarray(jitted), np.asarray(y))


def test_conv_gather_split_over_threads_is_the_same(rng, monkeypatch):
    """Gathers and tap sums above SPLIT_MIN run in parts on helper threads: the same
    matrices and sums, so the same bits, in every form (rows: a forward NHWC convolution;
    taps and positions traded: its kernel gradient; product first: its input gradient, the
    layer widening 5 -> 7 features)."""
    from corejax.lax import _split
    x = rng.standard_normal((6, 9, 8, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 7)).astype(np.float32)

    def loss(x, w):
        y = conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO",
                                                                           "NHWC"))
        return jnp.sum(y * y)
    grad = corejax.grad(loss, argnums=(0, 1))
    whole = [np.asarray(g) for g in grad(x, w)]
    monkeypatch.setattr(_split, "SPLIT_MIN", 1)
    for a, b in zip(whole, grad(x, w)):
        np.testing.assert_array_equal(a, np.asarray(b))


def test_cnn_gradients_same_bits_eager_and_jit(rng):
    """A forward convolution, its input gradient (rows gathered) and its kernel gradient
    (columns gathered), eagerly and compiled: one GEMM summing in the same order."""
    x = rng.standard_normal((8, 10, 10, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 7)).astype(np.float32)

    def loss(x, w):
        y = conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO",
                                                                           "NHWC"))
        y = reduce_window_max(y, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(jnp.tanh(y))
    grad = corejax.grad(loss, argnums=(0, 1))
    for eager, compiled in zip(grad(x, w), corejax.jit(grad)(x, w)):
        np.testing.assert_array_equal(np.asarray(eager), np.asarray(compiled))


@pytest.mark.parametrize("window", [(1, 2, 2, 1), (2, 3, 1, 2), (1, 1, 1, 1)])
def test_tiling_max_window_tangent_matches_tap_by_tap(window, rng, monkeypatch):
    """Windows that tile the operand take the reshaped tangent; ties (small integers) and
    NaNs give what the tap-by-tap mask gives, forward and reverse, eager and compiled."""
    from corejax.lax import windowed
    x = rng.integers(0, 3, (4, 6, 4, 6)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    assert windowed._tiles(x.shape, window_dimensions=window, window_strides=window,
                           padding=((0, 0),) * 4, base_dilation=(1,) * 4,
                           window_dilation=(1,) * 4)
    c = rng.standard_normal(tuple(n // w for n, w in zip(x.shape, window))).astype(np.float32)
    t = rng.standard_normal(x.shape).astype(np.float32)

    def f(x):
        return jnp.sum(reduce_window_max(x, window, window, "VALID") * c)
    fns = [corejax.grad(f), corejax.jit(corejax.grad(f)),
           lambda x: corejax.jvp(f, (x,), (t,))[1]]
    tiled = [np.asarray(fn(x)) for fn in fns]
    monkeypatch.setattr(windowed, "_tiles", lambda *a, **k: False)
    for got, fn in zip(tiled, fns):
        np.testing.assert_array_equal(got, np.asarray(fn(x)))


@pytest.mark.parametrize("window", [(1, 2, 2, 1), (2, 3, 1, 2)])
def test_tiling_sum_window_transpose_matches_spread_and_sum(window, rng, monkeypatch):
    """The transpose of a sum over tiling windows (average pooling's backward pass) is the
    cotangent broadcast over each window: what the general spread-and-sum transpose gives."""
    from corejax.lax import windowed
    x = rng.standard_normal((4, 6, 4, 6)).astype(np.float32)
    c = rng.standard_normal(tuple(n // w for n, w in zip(x.shape, window))).astype(np.float32)

    def f(x):
        return jnp.sum(reduce_window_sum(x, window, window, "VALID") * c)
    fns = [corejax.grad(f), corejax.jit(corejax.grad(f))]
    tiled = [np.asarray(fn(x)) for fn in fns]
    monkeypatch.setattr(windowed, "_tiles", lambda *a, **k: False)
    for got, fn in zip(tiled, fns):
        np.testing.assert_array_equal(got, np.asarray(fn(x)))


def test_reduce_window_generic_and_errors():
    x = jnp.arange(6.0)
    np.testing.assert_array_equal(np.asarray(reduce_window(x, 0.0, lax.add, (2,), (2,), "VALID")),
                                  [1, 5, 9])
    np.testing.assert_array_equal(
        np.asarray(reduce_window(x, -jnp.inf, lax.max, (3,), (1,), "SAME")), [1, 2, 3, 4, 5, 5])
    ints = reduce_window_max(jnp.arange(6, dtype=jnp.int32), (2,), (2,), [(0, 1)])
    assert ints.dtype == np.int32 and list(np.asarray(ints)) == [1, 3, 5]
    with pytest.raises(NotImplementedError, match="identity"):
        reduce_window(x, 1.0, lax.add, (2,), (2,), "VALID")
    with pytest.raises(NotImplementedError, match="computation"):
        reduce_window(x, 1.0, lax.mul, (2,), (2,), "VALID")
    with pytest.raises(TypeError, match=r"window_dimensions.*\(6,\)"):
        reduce_window_sum(x, (2, 2), (1, 1), [(0, 0), (0, 0)])


# --- property-based sweep ----------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def conv_configs(draw):
    nsp = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([1, 2]))
    batch_groups = 1 if groups > 1 else draw(st.sampled_from([1, 2]))
    n = batch_groups * draw(st.integers(1, 2))
    c_in = groups * draw(st.integers(1, 2))
    c_out = groups * batch_groups * draw(st.integers(1, 2))
    spatial = [draw(st.integers(1, 6)) for _ in range(nsp)]
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    pads = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)]
    channels_last = draw(st.booleans())
    seed = draw(st.integers(0, 2 ** 16))
    return nsp, groups, batch_groups, n, c_in, c_out, spatial, kernel, strides, lhs_dil, \
        rhs_dil, pads, channels_last, seed


@settings(max_examples=100, deadline=None)
@given(conv_configs())
def test_conv_property_sweep(config):
    (nsp, groups, batch_groups, n, c_in, c_out, spatial, kernel, strides, lhs_dil, rhs_dil,
     pads, channels_last, seed) = config
    sp = "HW"[:nsp]
    dn = (f"N{sp}C", f"{sp}IO", f"N{sp}C") if channels_last else (f"NC{sp}", f"OI{sp}",
                                                                  f"NC{sp}")
    lshape = (n, *spatial, c_in) if channels_last else (n, c_in, *spatial)
    rshape = ((*kernel, c_in // groups, c_out) if channels_last
              else (c_out, c_in // groups, *kernel))
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(lshape), rng.standard_normal(rshape)
    f = lambda x, w: conv_general_dilated(x, w, strides, pads, lhs_dil, rhs_dil, dn, groups,
                                          batch_groups)
    padded = [(s - 1) * d + 1 + lo + hi for s, d, (lo, hi) in zip(spatial, lhs_dil, pads)]
    if any(p < 0 for p in padded):
        return
    dnums = conv_dimension_numbers(lshape, rshape, dn)
    y = f(x.astype(np.float32), w.astype(np.float32))
    ref = naive_conv(x, w, strides, pads, lhs_dil, rhs_dil, dnums, groups, batch_groups)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-4, atol=1e-4)
    if y.size == 0:
        return
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    out, f_vjp = corejax.vjp(f, xf, wf)
    ct = rng.standard_normal(out.shape).astype(np.float32)
    gx, gw = f_vjp(ct)
    tx, tw = rng.standard_normal(lshape), rng.standard_normal(rshape)
    _, ty = corejax.jvp(f, (xf, wf), (tx.astype(np.float32), tw.astype(np.float32)))
    lhs = float(np.sum(np.asarray(ty, np.float64) * ct))
    rhs = float(np.sum(np.asarray(gx, np.float64) * tx) + np.sum(np.asarray(gw, np.float64) * tw))
    assert abs(lhs - rhs) <= 1e-3 * (1 + abs(lhs))


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 3), st.data())
def test_reduce_window_property_sweep(ndim, data):
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(ndim))
    dims = tuple(data.draw(st.integers(1, 3)) for _ in range(ndim))
    strides = tuple(data.draw(st.integers(1, 3)) for _ in range(ndim))
    pads = tuple((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
                 for _ in range(ndim))
    base = tuple(data.draw(st.integers(1, 2)) for _ in range(ndim))
    wdil = tuple(data.draw(st.integers(1, 2)) for _ in range(ndim))
    kind = data.draw(st.sampled_from(sorted(KINDS)))
    padded = [(n - 1) * b + 1 + lo + hi for n, b, (lo, hi) in zip(shape, base, pads)]
    if any(p < (d - 1) * w + 1 for p, d, w in zip(padded, dims, wdil)):
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal(shape).astype(np.float32)
    f = lambda x: KINDS[kind](x, dims, strides, pads, base, wdil)
    np.testing.assert_allclose(np.asarray(f(x)), naive_window(x, kind, dims, strides, pads,
                                                                base, wdil), rtol=1e-5, atol=1e-5)
    y, f_vjp = corejax.vjp(f, x)
    ct = rng.standard_normal(y.shape).astype(np.float32)
    t = rng.standard_normal(shape).astype(np.float32)
    (gx,) = f_vjp(ct)
    _, ty = corejax.jvp(f, (x,), (t,))
    lhs, rhs = float(np.sum(np.asarray(ty) * ct)), float(np.sum(np.asarray(gx) * t))
    assert abs(lhs - rhs) <= 1e-4 * (1 + abs(lhs))


def test_kernel_gradient_reads_the_forward_gather_under_jit(rng, monkeypatch):
    """In one compiled program the kernel gradient's gathered windows are the forward
    convolution's, element for element: they are gathered once per call (for a second call
    with other inputs, again), and the gradients keep the eager bits."""
    from corejax.lax import _conv_gemm
    gathers = []
    real = _conv_gemm.over_cores

    def counting(kernel, src, out, args):
        if kernel is _conv_gemm._kernels()[0]:
            gathers.append(out.shape)
        return real(kernel, src, out, args)

    monkeypatch.setattr(_conv_gemm, "over_cores", counting)
    w = rng.standard_normal((3, 3, 5, 7)).astype(np.float32)

    def loss(x, w):
        y = conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO",
                                                                           "NHWC"))
        return jnp.sum(jnp.tanh(y) ** 2)
    g = corejax.jit(corejax.grad(loss, argnums=(0, 1)))
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal((6, 9, 8, 5)).astype(np.float32)
        gathers.clear()
        compiled = g(x, w)
        assert len(gathers) == 1, gathers          # the kernel gradient reused it
        eager = corejax.grad(loss, argnums=(0, 1))(x, w)
        assert len(gathers) == 3                    # eagerly: forward and kernel gradient
        for a, b in zip(compiled, eager):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_convolutions_run_in_image_blocks_under_jit(rng, monkeypatch):
    """configs/cnn.yaml's second layer (32 -> 64 features) compiled: its forward convolution
    gathers each block of images' windows just before their product (into the whole buffer,
    which the kernel gradient then reads), and its input gradient, which narrows the features
    (64 -> 32: the product-first form), sums each block's taps right after its product
    (conv_blocks.image_blocks: each block's product on one OpenBLAS thread) where that has the
    product's own bits (blas.matmul's). The gradients keep the eager bits. Blocks hold about
    one L2 cache of rows (1 MiB here: 3 images of gathered windows and products, 4 of
    products), or are the product's own blocks where it has no plan: two images run whole."""
    from corejax import _machine
    from corejax.compiler import blas, conv_blocks
    if blas._adaptive is None:
        pytest.skip("no OpenBLAS thread control (one core, or another BLAS): no blocks")
    ran = []
    real = conv_blocks.image_blocks

    def recording(form, product_buffer):
        out = real(form, product_buffer)
        blocks = form.blocks
        ran.append((form.a.shape, blocks.images, blocks.prepare is not None,
                    blocks.finish_block is not None, out is not None))
        return out

    monkeypatch.setattr(conv_blocks, "image_blocks", recording)
    monkeypatch.setattr(_machine, "l2_bytes", lambda: 1 << 20)
    # whether the blocks' products (one OpenBLAS thread each) have the product's own bits
    # (on OpenBLAS's threads, or its own blocks where no plan passes) is the BLAS's:
    # OpenBLAS's AVX2 kernels round them otherwise, and then no image block runs
    agreed = {}
    real_agree = blas._adaptive.blocks_agree

    def agree(m, k, n, *rest):
        agreed[(m, n)] = same = real_agree(m, k, n, *rest)
        return same

    monkeypatch.setattr(blas._adaptive, "blocks_agree", agree)
    dn = ("NHWC", "HWIO", "NHWC")
    w = (rng.standard_normal((3, 3, 32, 64)) / 17).astype(np.float32)

    def loss(x, w):
        y = conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
        return jnp.sum(jnp.tanh(y) ** 2)
    g = corejax.jit(corejax.grad(loss, argnums=(0, 1)))
    def in_blocks(m, k, n_out, images, more_than):
        """Whether image blocks run: a product with no plan in its own blocks where they
        hold whole images (196 rows each); else in L2-sized blocks where they agree."""
        way = blas.plan_for(m, k, n_out, False, False, np.float32)
        if isinstance(way, blas.Blocks):
            return way.axis == 0 and len(way.bounds) > 2 and \
                all(b % 196 == 0 for b in way.bounds)
        return images > more_than and agreed[(m, n_out)]

    for n in (24, 2):
        x = rng.standard_normal((n, 14, 14, 32)).astype(np.float32)
        ran.clear()
        compiled = g(x, w)
        got = sorted(ran)
        # (eagerly, the convolutions try their blocks as compiled programs do)
        eager = corejax.grad(loss, argnums=(0, 1))(x, w)
        for c, e in zip(compiled, eager):
            np.testing.assert_array_equal(np.asarray(c), np.asarray(e))
        assert got == [
            ((n * 196, 64), n, False, True, in_blocks(n * 196, 64, 288, n, 4)),
            ((n * 196, 288), n, True, False, in_blocks(n * 196, 288, 64, n, 3))], got
        if n <= 4:
            assert (n * 196, 288) not in agreed     # (two images: no blocks tried)

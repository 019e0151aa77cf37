"""corejax.image beyond the conformance cases (tests/conformance/cases_image.py compares
values, dtypes and derivatives with JAX): errors, method names, derivatives in scale and
translation against finite differences, and properties of the weights."""
import numpy as np
import pytest

import corejax
import corejax.numpy as jnp
from corejax import image
from corejax.test_util import check_grads


def test_method_names_and_errors():
    assert image.ResizeMethod.from_string("bilinear") is image.ResizeMethod.LINEAR
    assert image.ResizeMethod.from_string("tricubic") is image.ResizeMethod.CUBIC
    with pytest.raises(ValueError, match='Unknown resize method "Linear"'):
        image.resize(jnp.ones(3), (5,), "Linear")
    with pytest.raises(AssertionError, match="ResizeMethod"):
        image.resize(jnp.ones(3), (5,), None)
    with pytest.raises(ValueError, match="one size per dimension"):
        image.resize(jnp.ones((2, 3)), (4,), "linear")
    with pytest.raises(ValueError, match="nearest"):
        image.scale_and_translate(jnp.ones(3), (5,), (0,), jnp.ones(1), jnp.zeros(1),
                                  "nearest")
    with pytest.raises(TypeError, match="1-D array"):
        image.scale_and_translate(jnp.ones(3), (5,), (0,), 1.5, jnp.zeros(1), "linear")
    with pytest.raises(ValueError, match="2 values for 1 spatial"):
        image.scale_and_translate(jnp.ones(3), (5,), (0,), jnp.ones(2), jnp.zeros(1),
                                  "linear")
    with pytest.raises(ZeroDivisionError, match="empty"):
        image.resize(jnp.ones((0, 3)), (2, 3), "linear")


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "lanczos5", "area"])
def test_weights_sum_to_one_and_keep_constants(method):
    for n_in, n_out in [(3, 7), (7, 3), (5, 5), (1, 4), (4, 1)]:
        out = image.resize(jnp.full((n_in,), 2.5), (n_out,), method)
        np.testing.assert_allclose(out, np.full(n_out, 2.5), rtol=1e-5)


def test_nearest_picks_and_keeps_dtype():
    x = jnp.arange(7, dtype=jnp.int32)
    np.testing.assert_array_equal(image.resize(x, (3,), "nearest"), [1, 3, 5])
    assert image.resize(x, (3,), "nearest").dtype == np.int32
    assert image.resize(x, (3,), "linear").dtype == np.float32
    np.testing.assert_array_equal(image.resize(jnp.arange(4.0), (6,), "nearest"),
                                  [0, 1, 1, 2, 3, 3])


def test_area_downsampling_by_an_integer_factor_averages_blocks():
    x = jnp.arange(12.0).reshape(4, 3)
    out = image.resize(x, (2, 3), "area")
    np.testing.assert_allclose(out, np.asarray(x).reshape(2, 2, 3).mean(axis=1), rtol=1e-6)


def test_scale_and_translate_shifts():
    x = jnp.arange(4.0)
    out = image.scale_and_translate(x, (6,), (0,), jnp.array([1.0]), jnp.array([2.0]),
                                    "linear")
    np.testing.assert_allclose(out, [0, 0, 0, 1, 2, 3])       # shifted in, zeros outside


def test_derivatives_in_scale_and_translation_match_finite_differences():
    x = jnp.asarray(np.random.default_rng(0).standard_normal((5, 4)), jnp.float32)
    for method in ("linear", "cubic", "lanczos3", "area"):
        def f(scale, translation, img):
            return image.scale_and_translate(img, (6, 3), (0, 1), scale, translation, method)
        check_grads(f, (jnp.array([1.3, 0.8]), jnp.array([0.25, -0.1]), x), order=1,
                    modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


def test_resize_under_jit_and_vmap():
    batch = jnp.asarray(np.random.default_rng(1).standard_normal((3, 4, 5)), jnp.float32)
    eager = jnp.stack([image.resize(b, (6, 2), "cubic") for b in batch])
    np.testing.assert_allclose(corejax.vmap(lambda b: image.resize(b, (6, 2), "cubic"))(batch),
                               eager, rtol=1e-5, atol=1e-6)
    jitted = corejax.jit(image.resize, static_argnums=(1, 2))
    np.testing.assert_allclose(jitted(batch, (3, 6, 2), "cubic"), eager, rtol=1e-5, atol=1e-6)
    scales = jnp.array([[0.8], [1.0], [1.7]])
    per_scale = corejax.vmap(lambda s: image.scale_and_translate(
        batch[0], (4, 7), (1,), s, jnp.zeros(1), "linear"))(scales)
    np.testing.assert_allclose(per_scale[1, :, :5], batch[0], rtol=1e-6)   # scale 1: the same

"""Optimizing complex parameters as pairs of real ones: the wrapped transform sees the real and
imaginary parts as separate real arrays."""
from __future__ import annotations

from typing import Any, NamedTuple

import corejax as jax
import corejax.numpy as jnp

from optim.base import GradientTransformation

__all__ = ["split_real_and_imaginary", "SplitRealAndImaginaryState"]


class SplitRealAndImaginaryArrays(NamedTuple):
    real: Any
    imaginary: Any


def _split(x):
    if jnp.iscomplexobj(x):
        return SplitRealAndImaginaryArrays(jnp.real(x), jnp.imag(x))
    return x


def _merge(x):
    if isinstance(x, SplitRealAndImaginaryArrays):
        return x.real + x.imaginary * 1j
    return x


class SplitRealAndImaginaryState(NamedTuple):
    inner_state: Any


def split_real_and_imaginary(inner: GradientTransformation) -> GradientTransformation:
    """Runs `inner` on (real, imaginary) pairs in place of complex leaves (real leaves pass as
    they are) and reassembles complex updates."""
    def init(params):
        return SplitRealAndImaginaryState(inner.init(jax.tree_util.tree_map(_split, params)))

    def update(updates, state, params=None):
        updates = jax.tree_util.tree_map(_split, updates)
        params = jax.tree_util.tree_map(_split, params)
        updates, inner_state = inner.update(updates, state.inner_state, params)
        merged = jax.tree_util.tree_map(
            _merge, updates, is_leaf=lambda x: isinstance(x, SplitRealAndImaginaryArrays))
        return merged, SplitRealAndImaginaryState(inner_state)
    return GradientTransformation(init, update)

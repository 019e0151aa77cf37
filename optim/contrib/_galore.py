"""GaLore (Zhao et al., 2024): a base optimizer run on gradients projected to a low-rank
subspace (refreshed from the gradient's SVD every `update_proj_gap` steps)."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional, Sequence, Union

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

from optim.base import GradientTransformation, safe_int32_increment, zero_count
from optim.combine import chain
from optim.transform import add_decayed_weights, scale_by_adam, scale_by_learning_rate

__all__ = ["galore", "scale_by_galore", "GaLoreState", "GaLoreDimensionNumbers"]

_map = jax.tree_util.tree_map


class GaLoreDimensionNumbers(NamedTuple):
    """The input (reduction) and output axes a weight is flattened to a matrix by; together
    they must name every axis."""
    reduction_axis: Union[Sequence[int], int] = 0
    output_axis: Union[Sequence[int], int] = 1


def _is_dims(x) -> bool:
    return isinstance(x, GaLoreDimensionNumbers)


def _is_dims_leaf(x) -> bool:
    return x is None or _is_dims(x)


def _matrix_view(x, dims):
    if x.ndim < 2:
        raise ValueError(f"GaLore requires tensors with rank >= 2, got shape {x.shape}; give "
                         "such leaves None dimension numbers.")

    def norm(axes):
        return tuple(a % x.ndim for a in ((axes,) if isinstance(axes, int) else axes))
    reduction, output = norm(dims.reduction_axis), norm(dims.output_axis)
    if set(reduction) & set(output):
        raise ValueError(f"GaLore: reduction axes {reduction} and output axes {output} must be "
                         f"disjoint (dimension numbers {dims}, shape {x.shape}).")
    if len(set(reduction) | set(output)) != x.ndim:
        raise ValueError(f"GaLore: every axis must be a reduction or output axis, got "
                         f"reduction={reduction}, output={output} for shape {x.shape}.")
    order = reduction + output
    inverse = tuple(sorted(range(x.ndim), key=lambda i: order[i]))
    shape = tuple(x.shape[a] for a in order)
    rows = math.prod(x.shape[a] for a in reduction)
    cols = math.prod(x.shape[a] for a in output)
    return (rows, cols, lambda y: jnp.reshape(jnp.transpose(y, order), (rows, cols)),
            lambda y: jnp.transpose(jnp.reshape(y, shape), inverse))


class GaLoreState(NamedTuple):
    count: Any
    base_optimizer_state: Any
    projector: Any           # per leaf: (m, r) left or (n, r) right projector; (0, 0) if none


def scale_by_galore(rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0,
                    base_optimizer: Optional[GradientTransformation] = None,
                    weight_dimension_numbers=None) -> GradientTransformation:
    """Projects each matrix gradient (m, n) to rank min(rank, m, n) on the side of its larger
    dimension, runs `base_optimizer` (scale_by_adam by default) there and maps the result
    back, times `scale`. Leaves with None dimension numbers (by default all but 2-D ones) go
    through `base_optimizer` as they are."""
    if base_optimizer is None:
        base_optimizer = scale_by_adam()
    if not isinstance(rank, int):
        raise TypeError(f"`rank` must be an int, got {type(rank)}")
    if rank <= 0:
        raise ValueError(f"`rank` must be positive, got {rank}")

    def dims_for(params):
        spec = weight_dimension_numbers
        if spec is None:
            return _map(lambda p: GaLoreDimensionNumbers() if p.ndim == 2 else None, params)
        if callable(spec) and not _is_dims(spec):
            return spec(params)
        if _is_dims(spec):
            return _map(lambda p: spec if p.ndim >= 2 else None, params)
        return spec

    def shapes(p, dims):
        if dims is None:
            return jnp.zeros((0, 0), p.dtype), jnp.zeros_like(p)
        m, n, _, _ = _matrix_view(p, dims)
        r = min(rank, m, n)
        if m >= n:
            return jnp.zeros((m, r), p.dtype), jnp.zeros((r, n), p.dtype)
        return jnp.zeros((n, r), p.dtype), jnp.zeros((m, r), p.dtype)

    def init(params):
        if not jax.tree_util.tree_leaves(params):
            return GaLoreState(zero_count(), base_optimizer.init(params), params)
        dims = dims_for(params)
        pairs = _map(lambda d, p: shapes(p, d), dims, params, is_leaf=_is_dims_leaf)
        first = _map(lambda d, pair: pair[0], dims, pairs, is_leaf=_is_dims_leaf)
        second = _map(lambda d, pair: pair[1], dims, pairs, is_leaf=_is_dims_leaf)
        return GaLoreState(zero_count(), base_optimizer.init(second), first)

    def update(updates, state, params=None):
        del params
        refresh = state.count % update_proj_gap == 0
        dims = dims_for(updates)

        def project(dims, grad, projector):
            if dims is None:
                return grad, projector
            m, n, to_matrix, _ = _matrix_view(grad, dims)
            g = to_matrix(grad)
            r = min(rank, m, n)
            if m >= n:
                def left():
                    u, _, _ = jnp.linalg.svd(g.astype(jnp.float32), full_matrices=False)
                    return u[:, :r].astype(grad.dtype)
                projector = lax.cond(refresh, left, lambda: projector)
                return projector.T @ g, projector

            def right():
                _, _, vh = jnp.linalg.svd(g.astype(jnp.float32), full_matrices=False)
                return vh[:r, :].T.astype(grad.dtype)
            projector = lax.cond(refresh, right, lambda: projector)
            return g @ projector, projector

        def project_back(dims, low, projector, grad):
            if dims is None:
                return low
            m, n, _, from_matrix = _matrix_view(grad, dims)
            full = projector @ low if m >= n else low @ projector.T
            return (scale * from_matrix(full)).astype(grad.dtype)

        pairs = _map(project, dims, updates, state.projector, is_leaf=_is_dims_leaf)
        low = _map(lambda d, pair: pair[0], dims, pairs, is_leaf=_is_dims_leaf)
        projectors = _map(lambda d, pair: pair[1], dims, pairs, is_leaf=_is_dims_leaf)
        low_updates, base_state = base_optimizer.update(low, state.base_optimizer_state, None)
        full = _map(project_back, dims, low_updates, projectors, updates, is_leaf=_is_dims_leaf)
        return full, GaLoreState(safe_int32_increment(state.count), base_state, projectors)
    return GradientTransformation(init, update)


def galore(learning_rate, rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0,
           base_optimizer: Optional[GradientTransformation] = None, weight_decay=0.0,
           mask=None, weight_dimension_numbers=None) -> GradientTransformation:
    """GaLore with decoupled weight decay and the learning rate."""
    return chain(scale_by_galore(rank=rank, update_proj_gap=update_proj_gap, scale=scale,
                                 base_optimizer=base_optimizer,
                                 weight_dimension_numbers=weight_dimension_numbers),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))

"""lax functions composed from other lax primitives: generic reduce, shape utilities (collapse,
broadcast_to_rank, ...), scatter_apply, approx_max_k / approx_min_k, and single-device stand-ins
for sharding and platform dispatch."""
from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from corejax import dtypes
from corejax.core import Tracer, get_aval
from corejax.tree_util import tree_flatten, tree_map, tree_unflatten
from corejax.lax import elementwise as ew
from corejax.lax import reductions as red
from corejax.lax.dot import Precision, dot_general
from corejax.lax.indexing import (GatherDimensionNumbers, ScatterDimensionNumbers, gather,
                                  scatter_add)
from corejax.lax.sorting import top_k
from corejax.lax.structural import (broadcast_in_dim, concatenate, dynamic_update_slice_in_dim,
                                    expand_dims, index_in_dim, reshape, slice_in_dim, transpose)
from corejax.lax.conv import ConvDimensionNumbers

__all__ = ["reduce", "batch_matmul", "broadcast_shapes", "broadcast_to_rank", "broadcast_like",
           "collapse", "index_take", "dynamic_update_index_in_dim", "empty", "shape_as_value",
           "scatter_apply", "approx_max_k", "approx_min_k", "RoundingMethod", "dtype",
           "with_sharding_constraint", "platform_dependent", "DotDimensionNumbers",
           "ConvGeneralDilatedDimensionNumbers", "PrecisionLike"]

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]
PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision]]


class RoundingMethod(enum.IntEnum):
    """How lax.round breaks ties: away from zero (its default) or to the nearest even."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _as_array(x):
    """`x` as an array, a Python scalar becoming a weakly typed one."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return ew.convert_element_type(x, dtypes.python_scalar_dtype(x), weak_type=True)
    return x


def dtype(x: Any) -> np.dtype:
    """The canonical dtype of a value or dtype-like (64-bit types narrow while x64 is off)."""
    return dtypes.canonicalize_dtype(dtypes.dtype(x))


# --- reduce ----------------------------------------------------------------------------------

# (computation, reduction, identity): a reduction whose init value is the identity of its monoid
# is the dedicated primitive, as in JAX; anything else folds the computation over a tree.
def _identity_of(comp, dt):
    dt = np.dtype(dt)
    if comp is ew.add or comp is ew.bitwise_or or comp is ew.bitwise_xor:
        return red.reduce_sum if comp is ew.add else (
            red.reduce_or if comp is ew.bitwise_or else red.reduce_xor), \
            (False if dt == np.bool_ else 0)
    if comp is ew.mul:
        return red.reduce_prod, 1
    if comp is ew.bitwise_and:
        return red.reduce_and, (True if dt == np.bool_ else -1)
    if comp is ew.max:
        return red.reduce_max, (-np.inf if dt.kind == "f" else (
            False if dt == np.bool_ else np.iinfo(dt).min))
    if comp is ew.min:
        return red.reduce_min, (np.inf if dt.kind == "f" else (
            True if dt == np.bool_ else np.iinfo(dt).max))
    return None, None


def _monoid_reduction(comp, operand, init):
    """The dedicated reduction for (comp, init), or None if init is not comp's identity."""
    if isinstance(init, Tracer):
        return None
    dt = get_aval(operand).dtype
    fn, identity = _identity_of(comp, dt)
    if fn is None or (fn in (red.reduce_or, red.reduce_and, red.reduce_xor) and
                      dt.kind not in "biu"):
        return None
    if fn in (red.reduce_or, red.reduce_and) and dt != np.bool_:
        return None  # reduce_and / reduce_or take bools only
    try:
        value = np.asarray(init).astype(dt)
    except (TypeError, ValueError):
        return None
    if value.shape != () or value != np.asarray(identity).astype(dt):
        return None
    return fn


def reduce(operands: Any, init_values: Any, computation, dimensions: Sequence[int],
           out_sharding=None) -> Any:
    """Reduces `operands` (a pytree of same-shaped arrays) over `dimensions` with
    `computation(acc, x)`, starting from `init_values` (a matching pytree of scalars).

    `computation` must be associative (as XLA requires); it is applied to whole arrays, so it
    must be elementwise (as any computation of scalars written with lax/jnp ops is)."""
    leaves, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands and init_values must have the same tree structure, "
                         f"got {tree} and {init_tree}.")
    if not leaves:
        raise ValueError("reduce: expected at least one operand.")
    shape = get_aval(leaves[0]).shape
    for x in leaves[1:]:
        if get_aval(x).shape != shape:
            raise ValueError(f"reduce: all operands must have the same shape, got "
                             f"{[get_aval(x).shape for x in leaves]}.")
    ndim = len(shape)
    dims = red._canon(tuple(dimensions), ndim)
    if len(leaves) == 1:
        fn = _monoid_reduction(computation, leaves[0], inits[0])
        if fn is not None:
            return tree_unflatten(tree, [fn(leaves[0], dims)])
    kept = tuple(i for i in range(ndim) if i not in dims)
    n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    out_shape = tuple(shape[i] for i in kept)
    flat = [reshape(transpose(x, kept + dims), out_shape + (n,)) for x in leaves]
    axis = len(out_shape)

    def combine(a, b):
        out = computation(tree_unflatten(tree, a), tree_unflatten(tree, b))
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"reduce: computation must return a pytree of the structure of the "
                            f"operands, {tree}, got {out_tree}.")
        return out_leaves

    # pairwise tree: log2(n) vectorized combines; an odd element rides along to the next level
    while n > 1:
        half = n // 2
        paired = combine([slice_in_dim(x, 0, 2 * half, 2, axis) for x in flat],
                         [slice_in_dim(x, 1, 2 * half, 2, axis) for x in flat])
        if n % 2:
            paired = [concatenate([p, slice_in_dim(x, n - 1, n, 1, axis)], axis)
                      for p, x in zip(paired, flat)]
        flat, n = paired, half + n % 2
    init_arrays = [broadcast_in_dim(ew.convert_element_type(_as_array(i), get_aval(x).dtype),
                                    out_shape, ()) for i, x in zip(inits, leaves)]
    if n == 0:
        return tree_unflatten(tree, init_arrays)
    folded = [reshape(x, out_shape) for x in flat]
    return tree_unflatten(tree, combine(init_arrays, folded))


# --- shapes ----------------------------------------------------------------------------------

def batch_matmul(lhs, rhs, precision: PrecisionLike = None):
    """Matrix products over the last two axes, the leading axes being batch axes."""
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or ra.ndim < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {la.ndim}, "
                         f"{ra.ndim}")
    if la.ndim != ra.ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {la.ndim}, "
                         f"{ra.ndim}")
    batch = tuple(range(la.ndim - 2))
    return dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)),
                       precision=precision)


def broadcast_shapes(*shapes):
    """The NumPy broadcast of shapes (tuples of ints)."""
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]
    if not shapes:
        raise ValueError("broadcast_shapes: expected at least one shape.")
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    out = []
    for sizes in zip(*padded):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_to_rank(x, rank: int):
    """`x` with leading unit axes added up to `rank` dimensions (unchanged if already there)."""
    x = _as_array(x)
    ndim = get_aval(x).ndim
    if ndim >= rank:
        return x
    return reshape(x, (1,) * (rank - ndim) + get_aval(x).shape)


def broadcast_like(arr, like_arr):
    """`arr` broadcast (NumPy rules) to the shape of `like_arr`."""
    arr = _as_array(arr)
    shape, target = get_aval(arr).shape, tuple(get_aval(_as_array(like_arr)).shape)
    out = broadcast_shapes(shape, target)
    if out != target:
        raise ValueError(f"broadcast_like: cannot broadcast shape {shape} to {target}.")
    return broadcast_in_dim(arr, target, tuple(range(len(target) - len(shape), len(target))))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """`operand` with axes start_dimension:stop_dimension merged into one."""
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if lo > hi:
        raise ValueError(f"Invalid dimension range passed to collapse: "
                         f"{shape}[{start_dimension}:{stop_dimension}]")
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return reshape(operand, shape[:lo] + (size,) + shape[hi:])


def index_take(src, idxs, axes: Sequence[int]):
    """src[idxs[0], idxs[1], ...] along `axes` (the indexed axes come first in the result)."""
    axes = tuple(operator.index(a) for a in axes)
    idxs = [_as_array(i) for i in idxs]
    if len(idxs) != len(axes):
        raise ValueError(f"index_take: got {len(idxs)} index arrays for {len(axes)} axes.")
    shape = get_aval(src).shape
    n = get_aval(idxs[0]).shape[0] if get_aval(idxs[0]).ndim else 1
    indices = concatenate([broadcast_in_dim(ew.convert_element_type(i, np.int32), (n, 1), (0,))
                           for i in idxs], 1)
    offset = tuple(range(1, len(shape) - len(axes) + 1))
    slice_sizes = tuple(1 if d in axes else s for d, s in enumerate(shape))
    dn = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=tuple(sorted(axes)),
                                start_index_map=axes)
    return gather(src, indices, dn, slice_sizes, mode="clip")


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices: bool = True):
    """`operand` with the slice at `index` along `axis` replaced by `update` (which may lack
    that axis)."""
    update = _as_array(update)
    aval = get_aval(operand)
    axis = operator.index(axis)
    if get_aval(update).ndim == aval.ndim - 1:
        update = expand_dims(update, (axis,))
    if allow_negative_indices:
        index = _as_array(index)
        index = ew.select(ew.lt(index, ew.full_like(index, 0)),
                          ew.add(index, ew.full_like(index, aval.shape[axis])), index)
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def shape_as_value(shape):
    """The shape as a 1-D NumPy integer array (int32 unless a dimension needs 64 bits; an
    empty shape gives an empty int32 array)."""
    dims = [operator.index(d) for d in shape]
    if not dims:
        return ew.full((0,), 0, np.int32)
    dtype = np.int32 if all(-2**31 <= d < 2**31 for d in dims) else np.int64
    return np.asarray(dims, dtype)


def empty(shape, dtype, *, out_sharding=None):
    """An array of the given shape and dtype (zeros, as JAX's)."""
    return ew.full(tuple(operator.index(d) for d in shape), 0, dtype)


# --- scatter ---------------------------------------------------------------------------------

def scatter_apply(operand, scatter_indices, func, dimension_numbers: ScatterDimensionNumbers,
                  *, update_shape=(), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode=None):
    """`func` applied to the elements of `operand` in the scattered windows (`update_shape`
    is the shape of the updates a scatter with these indices would take); an element indexed
    k times gets func k times, as in JAX. `func` must be elementwise."""
    from corejax.lax.control_flow import while_loop
    aval = get_aval(operand)
    counts = scatter_add(ew.full(aval.shape, 0, np.int32), scatter_indices,
                         ew.full(tuple(update_shape), 1, np.int32), dimension_numbers,
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                         mode=mode)
    rounds = red.reduce_max(counts)

    def body(state):
        i, x = state
        again = ew.gt(counts, broadcast_in_dim(i, aval.shape, ()))
        return ew.add(i, ew.full((), 1, np.int32)), ew.select(again, func(x), x)

    _, out = while_loop(lambda state: ew.lt(state[0], rounds), body,
                        (ew.full((), 0, np.int32), operand))
    return out


# --- approximate top-k (exact here, as on JAX's CPU backend) ---------------------------------

def _approx_k(operand, k, reduction_dimension, aggregate_to_topk, largest, name):
    aval = get_aval(operand)
    if aval.dtype.kind != "f":
        raise ValueError("operand must be a floating type")
    if aval.ndim == 0:
        raise ValueError(f"{name}: operand must have at least one dimension.")
    dim = red._canon(reduction_dimension, aval.ndim)[0]
    n = aval.shape[dim]
    k = operator.index(k)
    if k > n:
        raise ValueError(f"k must be smaller than the size of reduction_dim {n}, got {k}")
    # Without aggregation JAX's CPU backend returns a sorted candidate list longer than k;
    # here it is the whole sorted reduction dimension (exact, and a superset of JAX's).
    count = k if aggregate_to_topk else n
    last = aval.ndim - 1
    perm = tuple(d for d in range(aval.ndim) if d != dim) + (dim,)
    x = operand if dim == last else transpose(operand, perm)
    if largest:
        values, indices = top_k(x, count)
    else:
        # ascending order with NaNs last: negate, keeping NaN the smallest key of top_k
        values, indices = top_k(ew.neg(x), count)
        values = ew.neg(values)
    if dim != last:
        inv = tuple(int(i) for i in np.argsort(perm))
        values, indices = transpose(values, inv), transpose(indices, inv)
    return [values, indices]


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The k largest values along `reduction_dimension` and their indices. Exact: JAX's CPU
    backend computes the exact top-k too, so recall_target is met with recall 1."""
    return _approx_k(operand, k, reduction_dimension, aggregate_to_topk, True, "approx_max_k")


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The k smallest values along `reduction_dimension` and their indices (exact)."""
    return _approx_k(operand, k, reduction_dimension, aggregate_to_topk, False, "approx_min_k")


# --- identities with JAX's semantics on one device -------------------------------------------

def with_sharding_constraint(x, shardings):
    """`x` unchanged: on one device every sharding is the trivial one."""
    leaves = tree_flatten(shardings)[0] if shardings is not None else [None]
    if shardings is None or any(s is None for s in leaves):
        raise ValueError("One of with_sharding_constraint arguments got sharding None which is "
                         "not allowed. Please only pass `jax.sharding.Sharding` instances.")
    return tree_map(_as_array, x)


_PLATFORM_ALIASES = {"gpu": "cuda"}


def platform_dependent(*args: Any, default=None, **per_platform):
    """Calls the function given for the platform the computation runs on (`cpu`, or `cuda`
    when corejax's default backend is CUDA), else `default`."""
    from corejax import config
    platform = "cuda" if str(config.platform).lower() in ("cuda", "gpu") else "cpu"
    for name, fn in per_platform.items():
        if _PLATFORM_ALIASES.get(name, name) == platform:
            return fn(*args)
    if default is None:
        raise NotImplementedError(f"platform_dependent: no branch for the platform "
                                  f"{platform!r} (given: {sorted(per_platform)}); pass "
                                  f"{platform}=... or default=...")
    return default(*args)

"""Segment reductions, as jax.ops: `segment_sum`, `segment_max`, `segment_min`,
`segment_prod` combine the rows of `data` that share a segment id.

Row `i` of `data` goes to segment `segment_ids[i]`; the result has `num_segments` rows (by
default one more than the largest id, which must then be concrete), each the reduction of
its rows or the reduction's identity where it has none (0, -inf / the dtype's minimum,
+inf / its maximum, 1). Ids outside `[0, num_segments)`, negative ones included, are
dropped, or clamped into range with `mode='clip'`. They are scatters, so they differentiate,
batch and compile like `x.at[ids].add(data)`.
"""
from __future__ import annotations

import operator

import numpy as np

from corejax import core, dtypes
from corejax import numpy as jnp
from corejax.lax.indexing import GatherScatterMode

__all__ = ["segment_sum", "segment_max", "segment_min", "segment_prod"]


def _identity(reduction: str, dtype: np.dtype):
    if reduction == "add":
        return 0
    if reduction == "mul":
        return 1
    largest = reduction == "min"
    if dtype == np.bool_:
        return largest
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        return info.max if largest else info.min
    return np.inf if largest else -np.inf


_COMBINE = {"add": jnp.add, "mul": jnp.multiply, "max": jnp.maximum, "min": jnp.minimum}


def _segment(name, reduction, data, segment_ids, num_segments, indices_are_sorted,
             unique_indices, bucket_size, mode):
    for position, x in enumerate((data, segment_ids)):
        if not core.valid_jaxtype(x):
            raise TypeError(f"{name} requires array or scalar arguments, got "
                            f"{type(x).__name__} at position {position}: convert it with "
                            "jnp.asarray.")
    data, segment_ids = jnp.asarray(data), jnp.asarray(segment_ids)
    if not dtypes.is_integer(segment_ids.dtype):
        raise TypeError(f"{name}: segment_ids must be integers, got {segment_ids.dtype}.")
    if reduction in ("add", "mul") and data.dtype == np.bool_:
        raise TypeError(f"{name} does not accept boolean data (its reduction is "
                        f"{'a sum' if reduction == 'add' else 'a product'}); cast it to an "
                        "integer dtype.")
    if num_segments is None:
        num_segments = core.concrete_or_error(
            int, jnp.max(segment_ids),
            f"{name}() needs a concrete num_segments: pass num_segments= (under jit the "
            "largest segment id is not known)") + 1
    num_segments = operator.index(num_segments)
    mode = GatherScatterMode.from_any(mode) if mode is not None else None
    if mode is GatherScatterMode.CLIP:
        ids = jnp.clip(segment_ids, 0, num_segments - 1)
    elif mode is GatherScatterMode.PROMISE_IN_BOUNDS:
        ids = segment_ids
    else:   # out-of-range ids are dropped: a negative one must not count from the end
        ids = jnp.where(segment_ids < 0, num_segments, segment_ids)
        mode = GatherScatterMode.FILL_OR_DROP
    init = jnp.full((num_segments,) + data.shape[segment_ids.ndim:],
                    _identity(reduction, data.dtype), data.dtype)
    rows = segment_ids.shape[0] if segment_ids.ndim else 0
    if bucket_size is None or rows <= operator.index(bucket_size):
        pieces = [(ids, data)]
    else:
        step = operator.index(bucket_size)
        pieces = [(ids[i:i + step], data[i:i + step]) for i in range(0, rows, step)]
    out = None
    for piece_ids, piece in pieces:
        ref = init.at[piece_ids]
        update = {"add": ref.add, "mul": ref.multiply, "max": ref.max, "min": ref.min}
        part = update[reduction](piece, indices_are_sorted=indices_are_sorted,
                                 unique_indices=unique_indices, mode=mode)
        out = part if out is None else _COMBINE[reduction](out, part)
    return out


def segment_sum(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None):
    """The sum of the rows of `data` in each segment (0 where none). With `bucket_size`,
    the rows are summed in buckets of that many, then the buckets' sums added."""
    return _segment("segment_sum", "add", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode=None):
    """The product of the rows of `data` in each segment (1 where none)."""
    return _segment("segment_prod", "mul", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None):
    """The maximum of the rows of `data` in each segment (-inf, or the dtype's minimum,
    where none)."""
    return _segment("segment_max", "max", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None):
    """The minimum of the rows of `data` in each segment (+inf, or the dtype's maximum,
    where none)."""
    return _segment("segment_min", "min", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, mode)

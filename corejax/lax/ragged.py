"""ragged_dot / ragged_dot_general: grouped matrix products, the core of mixture-of-experts
layers, as one primitive with all its rules.

The lhs has one *ragged* dimension cut into consecutive groups by `group_sizes` (group j holds
the positions [start_j, start_j + size_j), start_j = size_0 + ... + size_{j-1}; with negative
sizes the ranges may overlap, and a position in several groups gets the sum of their products,
as in JAX). Three modes, by the kind of the ragged dimension:

1. non-contracting: each group's rows are multiplied by its own slice of the rhs along the rhs
   group dimension (positions in no group give zeros):
   [b..., m..., k...], [g, b..., k..., n...] -> [b..., m..., n...]
2. contracting: each group contracts only its own part of the contracting dimension, giving
   one product per group: [b..., m..., k...], [b..., k..., n...] -> [g, b..., m..., n...]
3. batch: an ordinary dot_general (what JAX computes too).

`group_sizes` is [g] or [b..., x..., g], x being the lhs dimensions of the ragged dimension's
kind (free in mode 1, contracting in mode 2) that come before it.
"""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from corejax import dtypes
from corejax.core import Primitive, ShapedArray, get_aval
from corejax.transforms import ad, batching
from corejax.transforms.ad import Zero, is_undefined_primal
from corejax.lax._factories import shape_str
from corejax.lax.dot import (_dot_general_abstract, _dot_general_impl, _free_dims,
                             apply_dot_algorithm, canonicalize_precision, dot_general)
from corejax.lax.elementwise import convert_element_type
from corejax.lax.structural import broadcast_in_dim, transpose

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


def _ints(xs):
    return tuple(operator.index(x) for x in xs)


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """The dimensions of a ragged dot: `dot_dimension_numbers` as for dot_general
    (((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))), the lhs ragged dimension
    (`lhs_ragged_dimensions`, one) and the rhs group dimension (`rhs_group_dimensions`, one in
    mode 1, none otherwise)."""
    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple

    def __post_init__(self):
        (lc, rc), (lb, rb) = self.dot_dimension_numbers
        object.__setattr__(self, "dot_dimension_numbers",
                           ((_ints(lc), _ints(rc)), (_ints(lb), _ints(rb))))
        object.__setattr__(self, "lhs_ragged_dimensions", _ints(self.lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", _ints(self.rhs_group_dimensions))


_NONCONTRACTING, _CONTRACTING, _BATCH = "noncontracting", "contracting", "batch"


def _mode(rdn) -> str:
    (lc, _), (lb, _) = rdn.dot_dimension_numbers
    r = rdn.lhs_ragged_dimensions[0]
    return _CONTRACTING if r in lc else (_BATCH if r in lb else _NONCONTRACTING)


def _without_group(dn, gd):
    """dot_general's dimension numbers for the rhs with its group dimension `gd` removed."""
    (lc, rc), (lb, rb) = dn
    shift = lambda ds: tuple(d - (d > gd) for d in ds)
    return (lc, shift(rc)), (lb, shift(rb))


def _x_dims(lhs_ndim, rdn):
    """The lhs dimensions of the ragged dimension's kind before it (group_sizes' x...)."""
    (lc, _), (lb, _) = rdn.dot_dimension_numbers
    r = rdn.lhs_ragged_dimensions[0]
    kind = lc if r in lc else _free_dims(lhs_ndim, lc, lb)
    return tuple(d for d in sorted(kind) if d < r)


def _full_group_shape(lhs_shape, rdn, g):
    (_, _), (lb, _) = rdn.dot_dimension_numbers
    return (tuple(lhs_shape[d] for d in lb)
            + tuple(lhs_shape[d] for d in _x_dims(len(lhs_shape), rdn)) + (g,))


def _check(lhs, rhs, group_sizes, rdn, preferred_element_type):
    """The result's ShapedArray, or the TypeError JAX raises for these operands."""
    ragged, group = rdn.lhs_ragged_dimensions, rdn.rhs_group_dimensions
    if len(ragged) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    r = ragged[0]
    if not 0 <= r < lhs.ndim:
        raise TypeError(f"ragged_dot_general requires lhs ragged dimension numbers to be "
                        f"nonnegative and less than the number of axes of the lhs value, got "
                        f"{r} for lhs of rank {lhs.ndim}.")
    mode = _mode(rdn)
    (lc, rc), (lb, rb) = dn = rdn.dot_dimension_numbers
    if mode == _NONCONTRACTING and len(group) != 1:
        raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs "
                        "ragged dimension is noncontracting.")
    if mode != _NONCONTRACTING and group:
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                        "ragged dimension is contracting or batch.")
    if group_sizes.ndim < 1:
        raise TypeError("expected rank of group_sizes to be >=1.")
    g = group_sizes.shape[-1]
    if mode == _NONCONTRACTING:
        gd = group[0]
        if not 0 <= gd < rhs.ndim:
            raise TypeError(f"ragged_dot_general requires rhs group dimension numbers to be "
                            f"nonnegative and less than the number of axes of the rhs value, "
                            f"got {gd} for rhs of rank {rhs.ndim}.")
        if gd in rc or gd in rb:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                            "distinct from contracting and batch dimensions.")
        if rhs.shape[gd] != g:
            raise TypeError(f"expected rhs group dimension size to be {g}, got "
                            f"{rhs.shape[gd]}.")
    if not dtypes.is_integer(group_sizes.dtype):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                        "np.integer.")
    full = _full_group_shape(lhs.shape, rdn, g)
    if group_sizes.shape not in ((g,), full):
        raise TypeError(f"expected group_sizes to have shape {shape_str(full)}, got "
                        f"{shape_str(group_sizes.shape)}.")
    if mode == _NONCONTRACTING:
        rhs_shape = rhs.shape[:gd] + rhs.shape[gd + 1:]
        out = _dot_general_abstract(lhs, rhs.update(shape=rhs_shape),
                                    dimension_numbers=_without_group(dn, gd),
                                    preferred_element_type=preferred_element_type)
        return out
    out = _dot_general_abstract(lhs, rhs, dimension_numbers=dn,
                                preferred_element_type=preferred_element_type)
    return out.update(shape=((g,) + out.shape) if mode == _CONTRACTING else out.shape)


# --- the primitive -----------------------------------------------------------------------------

ragged_dot_general_p = Primitive("ragged_dot_general")


def _abstract(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
              preferred_element_type=None, group_offset=None):
    return _check(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, preferred_element_type)


def _group_masks(lhs_shape, group_sizes, rdn):
    """For each group, the boolean mask (broadcastable to lhs_shape) of the lhs positions in
    it, from group sizes of the full shape [b..., x..., g]."""
    (_, _), (lb, _) = rdn.dot_dimension_numbers
    r = rdn.lhs_ragged_dimensions[0]
    axes = list(lb) + list(_x_dims(len(lhs_shape), rdn))
    ends = np.cumsum(group_sizes.astype(np.int64), axis=-1)
    starts = ends - group_sizes
    order = np.argsort(axes)
    shape = [lhs_shape[d] if d in axes else 1 for d in range(len(lhs_shape))]
    position = np.arange(lhs_shape[r]).reshape([-1 if d == r else 1
                                                for d in range(len(lhs_shape))])
    for j in range(group_sizes.shape[-1]):
        lo = np.transpose(starts[..., j], order).reshape(shape)
        hi = np.transpose(ends[..., j], order).reshape(shape)
        yield (lo <= position) & (position < hi)


def _group_ranges(group_sizes, extent):
    """(j, lo, hi) for each group of 1-D group sizes with rows in [0, extent)."""
    end = 0
    for j, size in enumerate(np.asarray(group_sizes, np.int64)):
        start, end = end, end + int(size)
        lo, hi = min(max(start, 0), extent), min(max(end, 0), extent)
        if hi > lo:
            yield j, lo, hi


def _take(x, axis, lo, hi):
    index = [slice(None)] * x.ndim
    index[axis] = slice(lo, hi)
    return tuple(index)


def _impl(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
          preferred_element_type=None, group_offset=None):
    rdn = ragged_dot_dimension_numbers
    out_aval = _check(get_aval(lhs), get_aval(rhs), get_aval(group_sizes), rdn,
                      preferred_element_type)
    (lc, rc), (lb, rb) = dn = rdn.dot_dimension_numbers
    r = rdn.lhs_ragged_dimensions[0]
    pet = preferred_element_type
    dot = lambda a, b, dims: _dot_general_impl(a, b, dims, preferred_element_type=pet)
    out = np.zeros(out_aval.shape, out_aval.dtype)
    zero = np.zeros((), lhs.dtype)
    if _mode(rdn) == _NONCONTRACTING:
        gd = rdn.rhs_group_dimensions[0]
        dims = _without_group(dn, gd)
        r_out = len(lb) + _free_dims(lhs.ndim, lc, lb).index(r)
        if group_sizes.ndim == 1:  # contiguous row ranges: one product per group's rows
            for j, lo, hi in _group_ranges(group_sizes, lhs.shape[r]):
                out[_take(out, r_out, lo, hi)] += dot(lhs[_take(lhs, r, lo, hi)],
                                                      np.take(rhs, j, axis=gd), dims)
        else:
            for j, mask in enumerate(_group_masks(lhs.shape, group_sizes, rdn)):
                out += dot(np.where(mask, lhs, zero), np.take(rhs, j, axis=gd), dims)
        return out
    rr = rc[lc.index(r)]
    if group_sizes.ndim == 1:
        for j, lo, hi in _group_ranges(group_sizes, lhs.shape[r]):
            out[j] = dot(lhs[_take(lhs, r, lo, hi)], rhs[_take(rhs, rr, lo, hi)], dn)
    else:
        for j, mask in enumerate(_group_masks(lhs.shape, group_sizes, rdn)):
            out[j] = dot(np.where(mask, lhs, zero), rhs, dn)
    return out


ragged_dot_general_p.def_impl(_impl)
ragged_dot_general_p.def_abstract_eval(_abstract)
ragged_dot_general_p.weak_type_rule = lambda lhs, rhs, gs, **p: (
    dtypes.is_weakly_typed(lhs) and dtypes.is_weakly_typed(rhs))


def _bind(lhs, rhs, group_sizes, dn, ragged, group, preferred_element_type):
    rdn = RaggedDotDimensionNumbers(dn, (ragged,), group)
    return ragged_dot_general_p.bind(lhs, rhs, group_sizes, ragged_dot_dimension_numbers=rdn,
                                     precision=None,
                                     preferred_element_type=preferred_element_type,
                                     group_offset=None)


# --- jvp and transpose: bilinear in (lhs, rhs) ---------------------------------------------------

ad.defjvp(ragged_dot_general_p,
          lambda t, out, lhs, rhs, gs, **params: ragged_dot_general_p.bind(t, rhs, gs, **params),
          lambda t, out, lhs, rhs, gs, **params: ragged_dot_general_p.bind(lhs, t, gs, **params),
          None)


def _to_layout(out, axes, dtype):
    """`out`, whose dimensions are the target's dimensions `axes`, in the target's order."""
    out = transpose(out, tuple(int(a) for a in np.argsort(axes)))
    return out if get_aval(out).dtype == dtype else convert_element_type(out, dtype)


def _same_group_layout(group_sizes, rdn, lhs_ndim, new_x_as_lhs_dims):
    """Group sizes for a transposed product whose x... dimensions are the original lhs
    dimensions `new_x_as_lhs_dims` (in its order)."""
    old_x = _x_dims(lhs_ndim, rdn)
    if get_aval(group_sizes).ndim == 1 or tuple(new_x_as_lhs_dims) == old_x:
        return group_sizes
    if sorted(new_x_as_lhs_dims) != list(old_x):
        raise NotImplementedError(
            "ragged_dot_general: the derivative with respect to the lhs of a contracting-mode "
            "ragged dot whose group_sizes depend on contracting dimensions paired in a "
            "different order in lhs and rhs is not implemented; pass group_sizes of shape "
            "[g] or pair the contracting dimensions in the same order.")
    nb = len(rdn.dot_dimension_numbers[1][0])
    perm = (tuple(range(nb)) + tuple(nb + old_x.index(d) for d in new_x_as_lhs_dims)
            + (nb + len(old_x),))
    return transpose(group_sizes, perm)


def _transpose(ct, lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
               preferred_element_type=None, group_offset=None):
    if type(ct) is Zero:
        return [None, None, None]
    rdn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    r = rdn.lhs_ragged_dimensions[0]
    lhs_aval = lhs.aval if is_undefined_primal(lhs) else get_aval(lhs)
    rhs_aval = rhs.aval if is_undefined_primal(rhs) else get_aval(rhs)
    nb = len(lb)
    lf = _free_dims(lhs_aval.ndim, lc, lb)
    lc_by_rc = [lc[rc.index(d)] for d in sorted(rc)]   # lhs partners of rhs's contracting dims
    rc_by_lc = [rc[lc.index(d)] for d in sorted(lc)]
    batch = tuple(range(nb))
    ct_lf = tuple(range(nb, nb + len(lf)))
    if _mode(rdn) == _NONCONTRACTING:
        gd = rdn.rhs_group_dimensions[0]
        rf = tuple(d for d in _free_dims(rhs_aval.ndim, rc, rb) if d != gd)
        ct_rf = tuple(range(nb + len(lf), nb + len(lf) + len(rf)))
        if is_undefined_primal(lhs):
            pet = preferred_element_type
            out = _bind(ct, rhs, group_sizes, ((ct_rf, rf), (batch, rb)),
                        nb + lf.index(r), (gd,), pet)
            return [_to_layout(out, list(lb) + list(lf) + lc_by_rc, lhs_aval.dtype), None, None]
        pet = preferred_element_type
        out = _bind(lhs, ct, group_sizes, ((lf, ct_lf), (lb, batch)), r, (), pet)
        return [None, _to_layout(out, [gd] + list(rb) + rc_by_lc + list(rf), rhs_aval.dtype),
                None]
    # contracting mode: ct is [g, batch..., lhs free..., rhs free...]
    rf = _free_dims(rhs_aval.ndim, rc, rb)
    ct_batch = tuple(1 + d for d in batch)
    ct_lf = tuple(1 + d for d in ct_lf)
    ct_rf = tuple(range(1 + nb + len(lf), 1 + nb + len(lf) + len(rf)))
    if is_undefined_primal(lhs):
        rr = rc[lc.index(r)]
        new_x = [lc[rc.index(d)] for d in sorted(rc) if d < rr]
        gs = _same_group_layout(group_sizes, rdn, lhs_aval.ndim, new_x)
        pet = preferred_element_type
        out = _bind(rhs, ct, gs, ((rf, ct_rf), (rb, ct_batch)), rr, (0,), pet)
        return [_to_layout(out, list(lb) + lc_by_rc + list(lf), lhs_aval.dtype), None, None]
    pet = preferred_element_type
    out = _bind(lhs, ct, group_sizes, ((lf, ct_lf), (lb, ct_batch)), r, (0,), pet)
    return [None, _to_layout(out, list(rb) + rc_by_lc + list(rf), rhs_aval.dtype), None]


ad.primitive_transposes[ragged_dot_general_p] = _transpose


# --- batching ----------------------------------------------------------------------------------

def _batch(vals, dims, *, ragged_dot_dimension_numbers, precision=None,
           preferred_element_type=None, group_offset=None):
    lhs, rhs, group_sizes = vals
    size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    rdn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    r = rdn.lhs_ragged_dimensions[0]
    up = lambda ds: tuple(d + 1 for d in ds)
    gs_aval = get_aval(group_sizes)
    gs_dim = dims[2]
    if dims[1] is None and gs_dim is None and gs_aval.ndim == 1 and _mode(rdn) == _NONCONTRACTING:
        # only the lhs is mapped: its batch axis becomes one more free dimension, first of all
        lhs = batching.moveaxis(lhs, dims[0], 0)
        out = _bind(lhs, rhs, group_sizes, ((up(lc), rc), (up(lb), rb)), r + 1,
                    rdn.rhs_group_dimensions, preferred_element_type)
        return out, len(lb)
    lhs = batching.bdim_at_front(lhs, dims[0], size)
    rhs = batching.bdim_at_front(rhs, dims[1], size)
    new_rdn = RaggedDotDimensionNumbers(((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb))),
                                        (r + 1,), up(rdn.rhs_group_dimensions))
    if gs_dim is not None or gs_aval.ndim > 1:
        group_sizes = batching.bdim_at_front(group_sizes, gs_dim, size)
        full = _full_group_shape(get_aval(lhs).shape, new_rdn, get_aval(group_sizes).shape[-1])
        if get_aval(group_sizes).shape != full:  # [size, g]: the same sizes for every row
            group_sizes = broadcast_in_dim(group_sizes, full, (0, len(full) - 1))
    out = ragged_dot_general_p.bind(lhs, rhs, group_sizes, ragged_dot_dimension_numbers=new_rdn,
                                    precision=None, preferred_element_type=preferred_element_type,
                                    group_offset=None)
    return out, (0 if _mode(rdn) == _NONCONTRACTING else 1)


batching.primitive_batchers[ragged_dot_general_p] = _batch


# --- the public functions ----------------------------------------------------------------------

def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers,
                       precision=None, preferred_element_type=None, group_offset=None,
                       out_sharding=None):
    """A dot_general whose lhs has one ragged dimension cut into groups by `group_sizes` (see
    the module docstring for the three modes and the shapes)."""
    rdn = ragged_dot_dimension_numbers
    if not isinstance(rdn, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general: ragged_dot_dimension_numbers must be a "
                        f"lax.RaggedDotDimensionNumbers, got {rdn!r}.")
    if group_offset is not None:
        raise TypeError("ragged_dot_general: group_offset is not supported (JAX 0.10 cannot "
                        "carry an array as an equation parameter either); pass None.")
    precision = canonicalize_precision(precision)
    pet = None if preferred_element_type is None else \
        dtypes.canonicalize_dtype(preferred_element_type)
    if get_aval(lhs).dtype != get_aval(rhs).dtype:  # operands of differing dtypes promote
        common = dtypes.result_type(lhs, rhs)
        lhs, rhs = convert_element_type(lhs, common), convert_element_type(rhs, common)
    _check(get_aval(lhs), get_aval(rhs), get_aval(group_sizes), rdn, pet)
    if _mode(rdn) == _BATCH:
        return dot_general(lhs, rhs, rdn.dot_dimension_numbers, precision, pet)
    lhs, rhs, pet, result = apply_dot_algorithm(precision, lhs, rhs, pet)
    out = ragged_dot_general_p.bind(lhs, rhs, group_sizes, ragged_dot_dimension_numbers=rdn,
                                    precision=None, preferred_element_type=pet,
                                    group_offset=None)
    return out if result is None else convert_element_type(out, result)


_RAGGED_DOT_DIMS = RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (1,)), ((), ())),
                                             lhs_ragged_dimensions=(0,),
                                             rhs_group_dimensions=(0,))


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """Grouped matrix product: lhs (m, k) cut along m into consecutive groups of
    `group_sizes` (g,) rows, group j multiplied by rhs[j] (g, k, n); rows past the groups
    give zeros. Returns (m, n)."""
    return ragged_dot_general(lhs, rhs, group_sizes, _RAGGED_DOT_DIMS, precision,
                              preferred_element_type, group_offset)

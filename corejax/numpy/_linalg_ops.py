"""Products: dot, matmul, vdot, inner, outer, tensordot and einsum, all via dot_general."""
from __future__ import annotations

import builtins
import string

import numpy as np

from corejax import lax
from corejax.core import get_aval
from corejax.lax._factories import shape_str
from corejax.numpy._core import (broadcast_shapes, broadcast_to_shape, check_arraylike,
                                 promote_dtypes)

__all__ = []


def _operands(name, a, b):
    check_arraylike(name, a, b)
    return promote_dtypes(a, b)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: the sum over a's last axis and b's second-to-last (or only) axis."""
    a, b = _operands("dot", a, b)
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        return lax.mul(*_scalar_bcast(a, b))
    b_axis = builtins.max(ba.ndim - 2, 0)
    if aa.shape[-1] != ba.shape[b_axis]:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got {shape_str((aa.shape[-1],))} and {shape_str((ba.shape[b_axis],))}. "
                        f"(jnp.dot of shapes {shape_str(aa.shape)} and {shape_str(ba.shape)})")
    return lax.dot_general(a, b, (((aa.ndim - 1,), (b_axis,)), ((), ())),
                           preferred_element_type=preferred_element_type)


def _scalar_bcast(a, b):
    shape = broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    return broadcast_to_shape(a, shape), broadcast_to_shape(b, shape)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with batch broadcasting over leading dimensions (the @ operator)."""
    a, b = _operands("matmul", a, b)
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes "
                         f"{shape_str(aa.shape)} and {shape_str(ba.shape)}.")
    a_vec, b_vec = aa.ndim == 1, ba.ndim == 1
    if a_vec or b_vec:
        # (as JAX: a vector operand is contracted directly, without a reshape, so the other
        # operand's leading dimensions are free dimensions of the product)
        ka, kb = aa.ndim - 1, 0 if b_vec else ba.ndim - 2
        if aa.shape[ka] != ba.shape[kb]:
            raise TypeError(f"dot_general requires contracting dimensions to have the same "
                            f"shape, got {shape_str((aa.shape[ka],))} and "
                            f"{shape_str((ba.shape[kb],))}. (matmul of shapes "
                            f"{shape_str(aa.shape)} and {shape_str(ba.shape)})")
        return lax.dot_general(a, b, (((ka,), (kb,)), ((), ())),
                               preferred_element_type=preferred_element_type)
    if aa.shape[-1] != ba.shape[-2]:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got {shape_str((aa.shape[-1],))} and {shape_str((ba.shape[-2],))}. "
                        f"(matmul of shapes {shape_str(aa.shape)} and {shape_str(ba.shape)})")
    batch = broadcast_shapes(aa.shape[:-2], ba.shape[:-2])
    nb = len(batch)
    if nb:
        # Unbroadcast batch dims that one side lacks entirely stay free dims of the other side
        # only when the other has none; otherwise broadcast both to the full batch shape.
        a = broadcast_to_shape(a, batch + aa.shape[-2:])
        b = broadcast_to_shape(b, batch + ba.shape[-2:])
    bd = tuple(range(nb))
    out = lax.dot_general(a, b, (((nb + 1,), (nb,)), (bd, bd)),
                          preferred_element_type=preferred_element_type)
    return out


def vdot(a, b, *, precision=None, preferred_element_type=None):
    from corejax.numpy._shape import ravel
    from corejax.numpy._ufuncs import conjugate
    return dot(conjugate(ravel(a)), ravel(b), preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    a, b = _operands("inner", a, b)
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        return lax.mul(*_scalar_bcast(a, b))
    return tensordot(a, b, ((aa.ndim - 1,), (ba.ndim - 1,)))


def outer(a, b, out=None):
    from corejax.numpy._shape import ravel
    a, b = _operands("outer", ravel(a), ravel(b))
    n, m = get_aval(a).shape[0], get_aval(b).shape[0]
    return lax.mul(lax.broadcast_in_dim(a, (n, m), (0,)), lax.broadcast_in_dim(b, (n, m), (1,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    a, b = _operands("tensordot", a, b)
    aa, ba = get_aval(a), get_aval(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n > builtins.min(aa.ndim, ba.ndim) or n < 0:
            raise TypeError(f"tensordot: number of contracting axes {n} exceeds the operand "
                            f"ranks {aa.ndim} and {ba.ndim}.")
        ca = tuple(range(aa.ndim - n, aa.ndim))
        cb = tuple(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError("tensordot requires axes lists to have equal length, got "
                            f"{ax_a} and {ax_b}.")
        ca = tuple(int(i) % aa.ndim for i in ax_a)
        cb = tuple(int(i) % ba.ndim for i in ax_b)
    return lax.dot_general(a, b, ((ca, cb), ((), ())), preferred_element_type=preferred_element_type)


def _sublist_subscripts(first, rest):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as (subscripts, operands)."""
    args = (first,) + tuple(rest)
    if len(args) % 2:  # an output sublist ends the arguments
        ops, subs, out = list(args[0:-1:2]), list(args[1:-1:2]), args[-1]
    else:
        ops, subs, out = list(args[0::2]), list(args[1::2]), None

    def letters(sub):
        return "".join("..." if s is Ellipsis else string.ascii_letters[int(s)] for s in sub)
    spec = ",".join(letters(sub) for sub in subs)
    return (spec if out is None else spec + "->" + letters(out)), ops


def einsum(subscripts, *operands, optimize=None, precision=None, preferred_element_type=None):
    """Einstein summation (explicit or implicit output, '...'): repeated labels become
    diagonals, labels used once are summed, and each pair of operands is one dot_general."""
    if not isinstance(subscripts, str):
        subscripts, operands = _sublist_subscripts(subscripts, operands)
    operands = promote_dtypes(*operands)
    spec = subscripts.replace(" ", "")
    inputs, output = spec.split("->") if "->" in spec else (spec, None)
    in_specs = inputs.split(",")
    if len(in_specs) != len(operands):
        raise ValueError(f"einsum: {len(in_specs)} operand subscripts for {len(operands)} "
                         "operands.")
    pool = [c for c in string.ascii_letters if c not in spec]
    ell_dims = [get_aval(x).ndim - len(s.replace("...", "")) if "..." in s else 0
                for s, x in zip(in_specs, operands)]
    ell = "".join(pool[:builtins.max(ell_dims, default=0)])
    expanded = []
    for s, x, k in zip(in_specs, operands, ell_dims):
        s = s.replace("...", ell[len(ell) - k:])
        if len(s) != get_aval(x).ndim:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of rank "
                             f"{get_aval(x).ndim}.")
        expanded.append(s)
    if output is None:
        counts = {}
        for s in expanded:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        output = output.replace("...", ell)
    arrs = [_reduce_labels(x, s, output, expanded, i)
            for i, (x, s) in enumerate(zip(operands, expanded))]
    while len(arrs) > 1:
        (x, sx), (y, sy) = arrs[0], arrs[1]
        keep = output + "".join(s for _, s in arrs[2:])
        arrs = [_contract_pair(x, sx, y, sy, keep, preferred_element_type)] + arrs[2:]
    x, s = arrs[0]
    return _to_output(x, s, output)


def _reduce_labels(x, spec, output, all_specs, index):
    """Takes diagonals for repeated labels, and sums labels that appear nowhere else."""
    from corejax.numpy._shape import diagonal
    while len(set(spec)) != len(spec):
        c = next(c for c in spec if spec.count(c) > 1)
        i = spec.index(c)
        j = spec.index(c, i + 1)
        x = diagonal(x, 0, i, j)  # removes axes i and j, appends the diagonal
        spec = "".join(ch for k, ch in enumerate(spec) if k not in (i, j)) + c
    others = "".join(s for k, s in enumerate(all_specs) if k != index) + output
    summed = tuple(k for k, c in enumerate(spec) if c not in others)
    if summed:
        x = lax.reduce_sum(x, summed)
        spec = "".join(c for k, c in enumerate(spec) if k not in summed)
    return x, spec


def _contract_pair(x, sx, y, sy, keep, preferred_element_type):
    batch = [c for c in sx if c in sy and c in keep]
    contract = [c for c in sx if c in sy and c not in keep]
    xa, ya = get_aval(x), get_aval(y)
    for c in batch:  # size-1 batch dims from '...' broadcast against the other operand
        nx, ny = xa.shape[sx.index(c)], ya.shape[sy.index(c)]
        if nx != ny:
            target = builtins.max(nx, ny)
            if nx == 1:
                x = broadcast_to_shape(x, tuple(target if k == sx.index(c) else n
                                                for k, n in enumerate(xa.shape)))
            else:
                y = broadcast_to_shape(y, tuple(target if k == sy.index(c) else n
                                                for k, n in enumerate(ya.shape)))
            xa, ya = get_aval(x), get_aval(y)
    dn = ((tuple(sx.index(c) for c in contract), tuple(sy.index(c) for c in contract)),
          (tuple(sx.index(c) for c in batch), tuple(sy.index(c) for c in batch)))
    out = lax.dot_general(x, y, dn, preferred_element_type=preferred_element_type)
    free_x = [c for c in sx if c not in batch and c not in contract]
    free_y = [c for c in sy if c not in batch and c not in contract]
    return out, "".join(batch + free_x + free_y)


def _to_output(x, spec, output):
    missing = set(output) - set(spec)
    if missing:
        raise ValueError(f"einsum: output subscript(s) {sorted(missing)} do not appear in the "
                         "inputs.")
    extra = tuple(k for k, c in enumerate(spec) if c not in output)
    if extra:
        x = lax.reduce_sum(x, extra)
        spec = "".join(c for c in spec if c in output)
    return lax.transpose(x, tuple(spec.index(c) for c in output))


def kron(a, b):
    """The Kronecker product: every element of a times the whole of b, tiled blockwise."""
    a, b = _operands("kron", a, b)
    nd = builtins.max(get_aval(a).ndim, get_aval(b).ndim)
    a = lax.reshape(a, (1,) * (nd - get_aval(a).ndim) + get_aval(a).shape)
    b = lax.reshape(b, (1,) * (nd - get_aval(b).ndim) + get_aval(b).shape)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    # a's axes at even positions, b's at odd: their product's reshape interleaves the blocks
    full = tuple(n for pair in zip(sa, sb) for n in pair)
    a_b = lax.broadcast_in_dim(a, full, tuple(range(0, 2 * nd, 2)))
    b_b = lax.broadcast_in_dim(b, full, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(lax.mul(a_b, b_b), tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross products of 2- or 3-vectors along axisa / axisb (2-vectors have a zero third
    component; two 2-vectors give the scalar z component)."""
    from corejax.numpy._shape import moveaxis
    a, b = _operands("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"Dimension must be either 2 or 3 for cross product, got {na} and {nb}")
    comp = lambda x, i: lax.index_in_dim(x, i, get_aval(x).ndim - 1, keepdims=False)
    a0, a1, b0, b1 = comp(a, 0), comp(a, 1), comp(b, 0), comp(b, 1)
    sub, mul = _elementwise("subtract"), _elementwise("multiply")
    z = sub(mul(a0, b1), mul(a1, b0))
    if na == 2 and nb == 2:
        return z
    zero = lax.full_like(a0, 0)
    a2 = comp(a, 2) if na == 3 else zero
    b2 = comp(b, 2) if nb == 3 else lax.full_like(b0, 0)
    x = sub(mul(a1, b2), mul(a2, b1))
    y = sub(mul(a2, b0), mul(a0, b2))
    from corejax.numpy._shape import stack
    return moveaxis(stack([x, y, z], -1), -1, axisc)


def _elementwise(name):
    from corejax.numpy import _ufuncs
    return getattr(_ufuncs, name)


def _batched_contraction(x, y, x_core, y_core, contract):
    """dot_general of x and y whose leading (batch) dims broadcast together; x_core / y_core
    trailing dims are core dims, `contract` = (x core index, y core index)."""
    xa, ya = get_aval(x), get_aval(y)
    batch = broadcast_shapes(xa.shape[:xa.ndim - x_core], ya.shape[:ya.ndim - y_core])
    x = broadcast_to_shape(x, batch + xa.shape[xa.ndim - x_core:])
    y = broadcast_to_shape(y, batch + ya.shape[ya.ndim - y_core:])
    nb = len(batch)
    bd = tuple(range(nb))
    return lax.dot_general(x, y, (((nb + contract[0],), (nb + contract[1],)), (bd, bd)))


def _core_size_check(name, sig, dim, n1, n2):
    if n1 != n2:
        raise ValueError(f"inconsistent size for core dimension {dim!r}: {n1} vs {n2} on "
                         f"jnp.{name} with signature {sig!r}")


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """The dot product of vectors along `axis`, broadcasting the other dimensions."""
    from corejax.numpy._shape import moveaxis
    x1, x2 = _operands("vecdot", x1, x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    if not s1 or not s2 or s1[axis] != s2[axis]:
        raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
    return _batched_contraction(moveaxis(x1, axis, -1), moveaxis(x2, axis, -1), 1, 1, (0, 0))


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast batch dimensions: (..., m, n), (..., n) -> (..., m)."""
    x1, x2 = _operands("matvec", x1, x2)
    _core_size_check("matvec", "(n,m),(m)->(n)", "m", get_aval(x1).shape[-1],
                     get_aval(x2).shape[-1])
    return _batched_contraction(x1, x2, 2, 1, (1, 0))


def vecmat(x1, x2, /):
    """Vector-matrix products over broadcast batch dimensions: (..., m), (..., m, n) -> (..., n)."""
    x1, x2 = _operands("vecmat", x1, x2)
    _core_size_check("vecmat", "(n),(n,m)->(m)", "n", get_aval(x1).shape[-1],
                     get_aval(x2).shape[-2])
    return _batched_contraction(x1, x2, 1, 2, (0, 0))

"""`ravel_pytree`: a pytree of arrays as one flat 1-D array, and the function that puts a
flat array back into the tree (for optimizers and solvers that work on vectors)."""
from __future__ import annotations

import numpy as np

from corejax import core, dtypes, lax
from corejax import numpy as jnp
from corejax.tree_util import PyTreeDef, tree_flatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
    """`(flat, unravel)`: the leaves of `pytree` raveled and concatenated into one 1-D array,
    and `unravel(flat)` that rebuilds the tree.

    When all leaves have one dtype the flat array has it (weakly typed only if every leaf
    is); otherwise the leaves are converted to the dtype their dtypes promote to, and
    unravel converts each part back to its leaf's dtype (it then requires a flat array of
    that promoted dtype). A tree without leaves ravels to an empty float32 array."""
    leaves, treedef = tree_flatten(pytree)
    avals = [core.get_aval(x) for x in leaves]
    shapes = tuple(a.shape for a in avals)
    from_dtypes = tuple(dtypes.canonicalize_dtype(a.dtype) for a in avals)
    if not leaves:
        return jnp.zeros(0, np.float32), _Unravel(treedef, (), (), None)
    if all(dt == from_dtypes[0] for dt in from_dtypes):
        flat = lax.concatenate([jnp.ravel(x) for x in leaves], 0)
        return flat, _Unravel(treedef, shapes, from_dtypes, None)
    to_dtype = dtypes.result_type(*from_dtypes)
    flat = lax.concatenate([jnp.ravel(lax.convert_element_type(x, to_dtype)) for x in leaves],
                           0)
    return flat, _Unravel(treedef, shapes, from_dtypes, to_dtype)


class _Unravel:
    """The unravel function of `ravel_pytree`: equal (and hashing equal) for equal trees
    of shapes and dtypes, so it can be a static argument of jit."""

    __slots__ = ("treedef", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef: PyTreeDef, shapes, from_dtypes, to_dtype):
        self.treedef, self.shapes = treedef, shapes
        self.from_dtypes, self.to_dtype = from_dtypes, to_dtype

    def __call__(self, flat):
        if not self.shapes:
            return self.treedef.unflatten([])
        if not core.valid_jaxtype(flat):
            raise TypeError(f"unravel expects the flat array ravel_pytree returned (an array), "
                            f"got {type(flat).__name__}: {flat!r}.")
        shape = np.shape(flat)
        sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        total = sum(sizes)
        if len(shape) == 0 or shape[0] != total:
            raise ValueError(f"unravel expects a flat array of {total} elements (shape "
                             f"({total},)), got shape {tuple(shape)}.")
        if self.to_dtype is not None:
            got = dtypes.canonicalize_dtype(dtypes.dtype(flat))
            if got != self.to_dtype:
                raise TypeError(f"unravel expects a flat array of dtype {self.to_dtype} (the "
                                f"dtype the leaves were promoted to), got dtype {got}.")
        parts, start = [], 0
        for size, leaf_shape, leaf_dtype in zip(sizes, self.shapes, self.from_dtypes):
            part = jnp.reshape(flat[start:start + size], leaf_shape)
            if self.to_dtype is not None:
                part = lax.convert_element_type(part, leaf_dtype)
            parts.append(part)
            start += size
        return self.treedef.unflatten(parts)

    def _key(self):
        return (self.treedef, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other):
        return isinstance(other, _Unravel) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"<unravel to {self.treedef}>"

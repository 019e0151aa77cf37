"""Arithmetic, reductions, casting and random draws over whole pytrees (optax.tree's math).

The functions carry their `tree_` prefix here; optim.tree gives them optax.tree's short names
and optim.tree_utils the older prefixed ones. Leaves that are None (optax's "no update") are
kept as None by the moment updates and by `tree_add_scale`, as Optax does.
"""
from __future__ import annotations

import functools
import operator

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

__all__ = ["tree_add", "tree_sub", "tree_mul", "tree_div", "tree_scale", "tree_add_scale",
           "tree_vdot", "tree_sum", "tree_max", "tree_min", "tree_size", "tree_conj",
           "tree_real", "tree_norm", "tree_batch_shape", "tree_zeros_like", "tree_ones_like",
           "tree_full_like", "tree_clip", "tree_update_moment", "tree_update_infinity_moment",
           "tree_update_moment_per_elem_norm", "tree_bias_correction", "tree_where",
           "tree_allclose", "tree_cast", "tree_cast_like", "tree_dtype", "tree_split_key_like",
           "tree_random_like", "tree_unwrap_random_key_data"]

_map = jax.tree_util.tree_map
_reduce = jax.tree_util.tree_reduce


def _is_none(x):
    return x is None


def tree_add(tree_x, tree_y, *other_trees):
    """Leafwise sum of two or more trees of the same structure."""
    return _map(lambda *leaves: functools.reduce(operator.add, leaves), tree_x, tree_y,
                *other_trees)


def tree_sub(tree_x, tree_y):
    """Leafwise `tree_x - tree_y`."""
    return _map(operator.sub, tree_x, tree_y)


def tree_mul(tree_x, tree_y):
    """Leafwise `tree_x * tree_y`."""
    return _map(operator.mul, tree_x, tree_y)


def tree_div(tree_x, tree_y):
    """Leafwise `tree_x / tree_y`."""
    return _map(operator.truediv, tree_x, tree_y)


def tree_scale(scalar, tree):
    """Every leaf multiplied by `scalar`."""
    return _map(lambda x: scalar * x, tree)


def tree_add_scale(tree_x, scalar, tree_y):
    """`tree_x + scalar * tree_y`, leafwise; None leaves of `tree_x` stay None."""
    scalar = jnp.asarray(scalar)
    return _map(lambda x, y: None if x is None else x + scalar * y, tree_x, tree_y,
                is_leaf=_is_none)


def _leaf_vdot(a, b):
    a, b = jnp.asarray(a), jnp.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"tree_vdot: matching leaves must have one shape, got {a.shape} and "
                         f"{b.shape}.")
    if jnp.issubdtype(a.dtype, jnp.complexfloating):
        a = jnp.conj(a)
    return jnp.tensordot(a, b, a.ndim, precision=lax.Precision.HIGHEST)


def tree_vdot(tree_x, tree_y):
    """Inner product of two trees seen as flat vectors (the first conjugated if complex)."""
    return _reduce(operator.add, _map(_leaf_vdot, tree_x, tree_y), 0)


def tree_sum(tree, associative_reduction: bool = False):
    """Sum of every element of every leaf (0 for an empty tree); `associative_reduction` adds
    the leaf sums pairwise instead of left to right."""
    sums = _map(jnp.sum, tree)
    if associative_reduction:
        return jax.tree.reduce_associative(operator.add, sums, identity=0)
    return _reduce(operator.add, sums, 0)


def _leaf_reduction(reduce_fn):
    def leaf(x):
        return None if jnp.size(x) == 0 else reduce_fn(x)
    return leaf


def tree_max(tree):
    """Largest element over all leaves (-inf for a tree without elements)."""
    return _reduce(jnp.maximum, _map(_leaf_reduction(jnp.max), tree), -float("inf"))


def tree_min(tree):
    """Smallest element over all leaves (inf for a tree without elements)."""
    return _reduce(jnp.minimum, _map(_leaf_reduction(jnp.min), tree), float("inf"))


def tree_size(tree) -> int:
    """Number of elements over all leaves (a Python int)."""
    return sum(jnp.size(leaf) for leaf in jax.tree_util.tree_leaves(tree))


def tree_conj(tree):
    """Complex conjugate of every leaf."""
    return _map(jnp.conj, tree)


def tree_real(tree):
    """Real part of every leaf."""
    return _map(jnp.real, tree)


def _abs_sq(x):
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return jnp.square(jnp.real(x)) + jnp.square(jnp.imag(x))
    return jnp.square(x)


def tree_norm(tree, ord=None, squared: bool = False):
    """Norm of the tree as one flat vector: `ord` None or 2 (Euclidean), 1, or inf ('inf',
    'infinity'); `squared` returns its square."""
    if ord is None or ord == 2:
        sq = tree_sum(_map(_abs_sq, tree))
        return jnp.array(sq if squared else jnp.sqrt(sq))
    if ord == 1:
        value = tree_sum(_map(jnp.abs, tree))
    elif ord == jnp.inf or ord in ("inf", "infinity"):
        value = tree_max(_map(jnp.abs, tree))
    else:
        raise ValueError(f"Unsupported ord: {ord!r}; tree_norm takes ord None, 1, 2 or inf "
                         "('inf', 'infinity').")
    return jnp.array(_abs_sq(value) if squared else value)


def tree_batch_shape(tree, shape: tuple = ()):
    """Every leaf broadcast to `(*shape, *leaf.shape)`."""
    return _map(lambda x: jnp.broadcast_to(x, (*shape, *jnp.shape(x))), tree)


def tree_zeros_like(tree, dtype=None):
    """Zeros shaped (and, unless `dtype`, typed) like each leaf."""
    return _map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree, dtype=None):
    """Ones shaped (and, unless `dtype`, typed) like each leaf."""
    return _map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree, fill_value, dtype=None):
    """`fill_value` shaped (and, unless `dtype`, typed) like each leaf."""
    return _map(lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_clip(tree, min_value=None, max_value=None):
    """Every leaf clipped to `[min_value, max_value]` (None: unbounded on that side)."""
    return _map(lambda x: jnp.clip(x, min_value, max_value), tree)


def tree_update_moment(updates, moments, decay, order):
    """Moving average of `updates ** order`: `(1 - decay) * g ** order + decay * m`."""
    return _map(lambda g, m: None if g is None else (1 - decay) * g ** order + decay * m,
                updates, moments, is_leaf=_is_none)


def tree_update_infinity_moment(updates, moments, decay, eps):
    """Decayed running maximum of `|g|`: `max(|g| + eps, decay * m)`."""
    return _map(lambda g, m: None if g is None else jnp.maximum(jnp.abs(g) + eps, decay * m),
                updates, moments, is_leaf=_is_none)


def tree_update_moment_per_elem_norm(updates, moments, decay, order):
    """Moving average of `|g| ** order` (`g ** order` for real leaves)."""
    def power(g):
        if jnp.isrealobj(g):
            return g ** order
        half = order / 2
        if float(half).is_integer():
            half = int(half)
        return _abs_sq(g) ** half
    return _map(lambda g, m: None if g is None else (1 - decay) * power(g) + decay * m,
                updates, moments, is_leaf=_is_none)


def tree_bias_correction(moment, decay, count):
    """Divides each leaf by `1 - decay ** count` (undoes a zero-initialized average)."""
    correction = jnp.asarray(1 - decay ** count)
    return _map(lambda m: m / correction.astype(m.dtype), moment)


def tree_where(condition, tree_x, tree_y):
    """`jnp.where(condition, x, y)` leaf by leaf."""
    return _map(lambda x, y: jnp.where(condition, x, y), tree_x, tree_y)


def tree_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every pair of matching leaves is `jnp.allclose` (a bool array; True when empty)."""
    close = _map(lambda x, y: jnp.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan),
                 a, b)
    return functools.reduce(operator.and_, jax.tree_util.tree_leaves(close), True)


# --- casting ------------------------------------------------------------------------------------

def tree_cast(tree, dtype):
    """Every leaf cast to `dtype` (None: the tree unchanged)."""
    if dtype is None:
        return tree
    return _map(lambda x: x.astype(dtype), tree)


def tree_cast_like(tree, other_tree):
    """Each leaf cast to the dtype of the matching leaf of `other_tree` (leaves of
    `other_tree` without a dtype leave theirs alone)."""
    return _map(lambda x, o: x.astype(o.dtype) if hasattr(o, "dtype") else x, tree, other_tree)


def _lower_dtype(d1, d2):
    promoted = jnp.promote_types(d1, d2)
    if promoted == d1:
        return d2
    if promoted == d2:
        return d1
    raise ValueError(f"Cannot compare dtype of dtype1={d1!r} and dtype2={d2!r}. Neither {d1} "
                     f"nor {d2} can be promoted to the other.")


def _higher_dtype(d1, d2):
    return d2 if _lower_dtype(d1, d2) == d1 else d1


def tree_dtype(tree, mixed_dtype_handler=None):
    """The dtype of the leaves. With leaves of several dtypes: an error naming them when
    `mixed_dtype_handler` is None, else their 'promote'd, 'highest' or 'lowest' dtype."""
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        return jnp.asarray(leaves).dtype
    dtypes = [jnp.asarray(x).dtype for x in leaves]
    if mixed_dtype_handler is None:
        paths = jax.tree_util.tree_leaves_with_path(tree)
        errors = [f"Expected dtype={dtypes[0]!r} for {jax.tree_util.keystr(path)} but got "
                  f"{dtype}." for (path, _), dtype in zip(paths, dtypes) if dtype != dtypes[0]]
        if errors:
            raise ValueError("\n".join(errors) + "\nPass mixed_dtype_handler='promote', "
                             "'highest' or 'lowest' to accept mixed dtypes.")
        return dtypes[0]
    combine = {"promote": jnp.promote_types, "highest": _higher_dtype,
               "lowest": _lower_dtype}.get(mixed_dtype_handler)
    if combine is None:
        raise ValueError(f"Invalid value for mixed_dtype_handler={mixed_dtype_handler!r}, "
                         "possible values are: None, \"promote\", \"highest\", \"lowest\".")
    return jnp.dtype(functools.reduce(combine, dtypes))


# --- random -------------------------------------------------------------------------------------

def tree_split_key_like(rng_key, target_tree):
    """One key per leaf of `target_tree`, split from `rng_key`, in a tree of its structure."""
    treedef = jax.tree_util.tree_structure(target_tree)
    keys = jax.random.split(rng_key, treedef.num_leaves)
    return jax.tree_util.tree_unflatten(treedef, list(keys))


def tree_random_like(rng_key, target_tree, sampler=jax.random.normal, dtype=None):
    """A tree like `target_tree` whose leaves are `sampler(key, leaf.shape, dtype or
    leaf.dtype)`, each with its own key split from `rng_key`."""
    keys = tree_split_key_like(rng_key, target_tree)
    return _map(lambda leaf, key: sampler(key, leaf.shape, dtype or leaf.dtype), target_tree,
                keys)


def _is_typed_key(x):
    dtype = getattr(x, "dtype", None)
    return dtype is not None and str(dtype).startswith("key<")


def tree_unwrap_random_key_data(input_tree):
    """Typed PRNG keys replaced by their raw uint32 data; other leaves unchanged."""
    # is_leaf: corejax's tree_util flattens a typed key array to its data.
    return _map(lambda x: jax.random.key_data(x) if _is_typed_key(x) else x, input_tree,
                is_leaf=_is_typed_key)

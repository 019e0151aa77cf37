"""`smap`: shard_map over one mesh axis of the mesh in context, its splits given as vmap's
in_axes / out_axes (public as corejax.smap).

`smap(f, in_axes=0, out_axes=0, axis_name='i')` is `shard_map(f, in_specs=P('i'),
out_specs=P('i'), axis_names={'i'})` over the mesh `set_mesh` put in context: an axis number
k becomes the spec that splits dimension k over `axis_name` (P(None, ..., None, axis_name)),
None the spec that splits nothing (the value whole on every device). Several mesh axes are
mapped by nesting one smap per axis. With in_axes left out, the splits are read from the
arguments' shardings, which only an Explicit axis has.

A negative axis number splits dimension 0, as JAX 0.10.2's smap does (its spec is built by
repeating None k times, which for k < 0 is no repetition), not the dimension counted from the
end that vmap's negative in_axes mean.
"""
from __future__ import annotations

from corejax._shard_map import Infer, mapped_over_mesh
from corejax._tree_traced import tree_flatten
from corejax.sharding import PartitionSpec

__all__ = ["smap"]


def _is_axis(a) -> bool:
    return isinstance(a, int)


def _spec_of(axis_name, axis) -> PartitionSpec:
    return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def _specs_of(axis_name, axes):
    """`axes` (a tree of axis numbers and None) with each number or None made its spec."""
    if axes is None or _is_axis(axes):
        return _spec_of(axis_name, axes)
    if isinstance(axes, (tuple, list)):
        return type(axes)(_specs_of(axis_name, a) for a in axes)
    if isinstance(axes, dict):
        return {k: _specs_of(axis_name, a) for k, a in axes.items()}
    raise TypeError(f"smap axes must be ints, None or tuples, lists and dicts of them, got "
                    f"{axes!r}.")


def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
    """Maps `f` over the mesh axis `axis_name` of the mesh in context: each device calls `f`
    on its block of the arguments, split along dimension `in_axes` (None: not split), and
    the outputs' blocks are joined along dimension `out_axes` (None: one block, the same on
    every device). in_axes: an int, None, or a tuple with one entry per positional argument
    (each an int, None, or a container of them); left out, each argument's split is read
    from its sharding (an Explicit axis only)."""
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap maps over one mesh axis: axis_name must be a single (hashable) "
                        f"axis name such as a str, not {axis_name!r}. Nest one smap per axis to "
                        "map over several.")
    if in_axes is not Infer and in_axes is not None and not isinstance(in_axes, (int, tuple)):
        raise TypeError(f"smap in_axes must be an int, None, jax.sharding.Infer or a tuple with "
                        f"one entry per positional argument of the function, got {in_axes!r}.")
    if in_axes is not Infer and not all(_is_axis(a) for a in tree_flatten(in_axes)[0]):
        raise TypeError(f"smap in_axes entries must be ints or None (or containers of them), "
                        f"got {in_axes!r}.")
    if not all(_is_axis(a) for a in tree_flatten(out_axes)[0]):
        raise TypeError(f"smap out_axes must be an int, None or a container of them, got "
                        f"{out_axes!r}.")
    in_specs = Infer if in_axes is Infer else _specs_of(axis_name, in_axes)
    out_specs = _specs_of(axis_name, out_axes)

    def build(g):
        return mapped_over_mesh(g, out_specs=out_specs, in_specs=in_specs, mesh=None,
                                axis_names=frozenset([axis_name]), check_vma=True, smap=True)

    return build if f is None else build(f)

"""`reshard(xs, out_shardings)`: arrays placed as new shardings (public as corejax.reshard and
corejax.sharding.reshard).

Outside a traced function it is device_put to the sharding. Inside one it binds `reshard_p`,
which tells a sharded jit (corejax/_sharded_jit.py) the sharding the value must have there;
everywhere else (vmap, grad, a jit over one device) the value is unchanged.
"""
from __future__ import annotations

from corejax._tree_traced import tree_flatten, tree_unflatten
from corejax.compiler import registry
from corejax.core import Primitive, Tracer, get_aval
from corejax.sharding import (NamedSharding, PartitionSpec, Sharding, resolve_sharding,
                              state as sharding_state)
from corejax.transforms import ad, batching

__all__ = ["reshard", "reshard_p"]

reshard_p = Primitive("reshard")


def _impl(x, *, sharding):
    from corejax.array import device_put
    return device_put(x, sharding)


reshard_p.def_impl(_impl)
registry.def_mesh_placing(reshard_p)
reshard_p.def_abstract_eval(lambda aval, *, sharding: aval)
reshard_p.weak_type_rule = lambda x, *, sharding: get_aval(x).weak_type
ad.deflinear(reshard_p, lambda ct, x, *, sharding: [ad.instantiate_zeros(ct)])


def _batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is None or not isinstance(sharding, NamedSharding):
        return reshard_p.bind(x, sharding=sharding), d
    spec = list(sharding.spec) + [None] * (get_aval(x).ndim - 1 - len(sharding.spec))
    spec.insert(d, None)
    return reshard_p.bind(x, sharding=NamedSharding(sharding.mesh, PartitionSpec(*spec))), d


batching.primitive_batchers[reshard_p] = _batch


def _prefix(shardings, xs) -> list:
    is_leaf = lambda s: s is None or isinstance(s, (Sharding, PartitionSpec))   # noqa: E731
    if is_leaf(shardings):
        return [shardings] * len(tree_flatten(xs)[0])
    leaves, tree = tree_flatten(shardings, is_leaf=is_leaf)
    try:
        subtrees = tree.flatten_up_to(xs)
    except ValueError as e:
        raise ValueError(f"reshard out_shardings must be a tree prefix of the arrays: {e}") \
            from None
    return [s for s, sub in zip(leaves, subtrees) for _ in tree_flatten(sub)[0]]


def reshard(xs, out_shardings):
    """Each array of pytree `xs` placed as its sharding in `out_shardings` (a Sharding, a
    PartitionSpec over the mesh in context, or a tree prefix of `xs` of those)."""
    leaves, tree = tree_flatten(xs)
    out = []
    for x, s in zip(leaves, _prefix(out_shardings, xs)):
        if s is None:
            raise ValueError("reshard out_shardings cannot be None: pass a Sharding or a "
                             "PartitionSpec for every array.")
        s = resolve_sharding(s, "reshard")
        if isinstance(x, Tracer):
            sharding_state.mesh_ops_staged = True   # (a jit staging this must look for it)
            out.append(reshard_p.bind(x, sharding=s))
        else:
            from corejax.array import device_put
            if isinstance(s, NamedSharding):    # JAX's reshard spells the spec at full rank
                ndim = get_aval(x).ndim
                s = NamedSharding(s.mesh, PartitionSpec(
                    *s.spec, *[None] * (ndim - len(s.spec))))
            out.append(device_put(x, s))
    return tree_unflatten(tree, out)

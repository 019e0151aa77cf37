"""corejax.experimental.shard_map: JAX's deprecated legacy spelling of shard_map,
`shard_map(f, mesh, in_specs, out_specs, check_rep=True)` (use corejax.shard_map)."""
import warnings

__all__: list = []


def _legacy_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
    """Please use `corejax.shard_map`: `corejax.experimental.shard_map.shard_map` is
    deprecated, as JAX's is."""
    from corejax._shard_map import shard_map
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                     check_vma=check_rep)


def __getattr__(name):
    if name == "shard_map":
        warnings.warn("jax.experimental.shard_map is deprecated in v0.8.0. Used "
                      "jax.shard_map instead.", DeprecationWarning, stacklevel=2)
        return _legacy_shard_map
    raise AttributeError(f"module 'corejax.experimental.shard_map' has no attribute {name!r}")

"""The key-reuse checker behind `config.debug_key_reuse` (JAX's `jax.debug_key_reuse`).

While the option is on, every typed key array (`random.key`, `split` of a typed key, ...)
carries a consumed state: False, True, or a boolean mask over its elements. Random functions
that draw from a key sink it (samplers, `split`, `bits`); a sunk key passed to another one
raises KeyReuseError. What JAX's checker measurably does, and so this one:

- `fold_in`, `key_data`, `clone`, `copy`, comparisons and `wrap_key_data` consume nothing;
  `clone`, `copy` and `wrap_key_data` return fresh keys, even from a consumed key.
- Indexing or slicing a key array sinks the elements it selects and returns fresh keys, so
  `k1, k2 = split(key)` is fine and `keys[0]` twice raises; reshape / transpose / squeeze
  carry the mask over to their result.
- Legacy uint32 keys (`PRNGKey`) are not tracked. Keys consumed while the option is off are not
  remembered.
- The checks run on whatever a key holds, concrete or traced: a function that uses a key twice
  raises while it is traced (inside jit, make_jaxpr, vmap, grad, scan or cond bodies). Under vmap
  and grad the consumed key is also the caller's: its state carries back through the batching /
  JVP tracers. A jitted function's own signature (which key arguments it consumes, which it
  returns unchanged) is found by tracing it once per argument signature (`jit_call`), so a
  consumed key passed to a jitted consumer raises and a key a jitted function consumes is
  consumed for its caller.

Nothing here runs while the option is off: the random functions test one dict entry.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from corejax.config import config
from corejax.errors import KeyReuseError

# read on the PRNG's hot path without Config.__getattr__
config_values = config._values

# the names JAX's messages give the operation that consumed a key eagerly
_EAGER_NAMES = {"split": "random_split", "bits": "random_bits", "slice": "slice"}


def _is_consumed(state, mask=True) -> bool:
    return bool(np.any(np.logical_and(state, mask)))


def _staged(data) -> bool:
    """Whether `data` is a tracer of a staging trace (jit, make_jaxpr, control flow bodies)."""
    from corejax.core import Tracer
    from corejax.transforms.ad import JVPTracer
    from corejax.transforms.batching import BatchTracer
    return isinstance(data, Tracer) and not isinstance(data, (BatchTracer, JVPTracer))


def _error(keys, op: str, index: int = 0) -> KeyReuseError:
    if _staged(keys._data):
        return KeyReuseError(f"In {_EAGER_NAMES.get(op, 'jit')}, argument {index} is already "
                             "consumed.")
    return KeyReuseError(f"Previously-consumed key passed to "
                         f"{_EAGER_NAMES.get(op, 'jit-compiled function')} at index {index}")


# --- the caller's key behind a vmap / grad tracer ----------------------------------------------

# id of a key array's data -> the key array, for the keys the transformations flattened
_outer_keys: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def note_flattened(keys) -> None:
    """Remembers `keys` as the owner of its data, so that consuming a key rebuilt by vmap or
    grad around that data (through their tracers) consumes `keys` too."""
    _outer_keys[id(keys._data)] = keys


def _caller_key(data):
    from corejax.transforms.ad import JVPTracer
    from corejax.transforms.batching import BatchTracer
    while True:
        if isinstance(data, BatchTracer):
            data = data.val
        elif isinstance(data, JVPTracer):
            data = data.primal
        else:
            return None
        outer = _outer_keys.get(id(data))
        if outer is not None and outer._data is data:
            return outer


# --- consuming ------------------------------------------------------------------------------------

def consume(keys, op: str, mask=True, index: int = 0) -> None:
    """Sinks the elements `mask` selects of the typed key array `keys` (all by default),
    raising KeyReuseError if one of them was sunk already."""
    if getattr(_replaying, "on", False):
        return
    if _is_consumed(keys._consumed, mask):
        raise _error(keys, op, index)
    outer = _caller_key(keys._data)
    if outer is not None:
        if _is_consumed(outer._consumed):
            raise _error(outer, op, index)
        consume(outer, op, index=index)
    keys._consumed = _merge(keys._consumed, mask)


def _merge(state, mask):
    if mask is True or state is True:
        return True
    merged = np.logical_or(state, mask)
    return True if merged.all() else merged


def index_mask(shape: tuple, index):
    """The elements of a key array of `shape` that `index` selects (True: all of them, when
    the index is traced)."""
    mask = np.zeros(shape, bool)
    try:
        mask[tuple(np.asarray(i) if not isinstance(i, (slice, type(Ellipsis), type(None)))
                   else i for i in index)] = True
    except Exception:   # a traced index: any element may be selected
        return True
    return True if mask.all() else mask


def carried(state, transform):
    """The consumed state of a reshaped / transposed key array."""
    return state if isinstance(state, bool) else transform(state)


# --- jitted functions ----------------------------------------------------------------------------

class _Signature:
    """What one trace of a jitted function does to its key arguments (in flattened order):
    the mask each sinks, and for each key it returns, the argument it forwards unchanged."""

    __slots__ = ("sinks", "forwards")

    def __init__(self, sinks, forwards):
        self.sinks, self.forwards = sinks, forwards


_signatures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# set while a jitted function whose signature is applied runs: its trace, if any, repeats the
# one `_signature` checked, so nothing in it is checked or consumed again
_replaying = threading.local()
# what `jit_call` returns to let the jitted function's call go on unchecked
PROCEED = object()


def _key_leaves(tree):
    from corejax.random._keys import PRNGKeyArray
    from corejax.tree_util import tree_leaves
    return [(i, x) for i, x in enumerate(tree_leaves(tree)) if isinstance(x, PRNGKeyArray)]


def _signature(jitted, args, kwargs) -> _Signature:
    from corejax.api import make_jaxpr
    from corejax.random._keys import PRNGKeyArray
    from corejax.tree_util import tree_leaves
    static_nums, static_vals, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
    leaves = tree_leaves((dyn_args, dyn_kwargs))
    cache_key = (repr([(getattr(x, "shape", None), getattr(x, "dtype", type(x)))
                       for x in leaves]), repr(static_vals), repr(sorted(dyn_kwargs)),
                 len(args), config.enable_x64, config.threefry_partitionable)
    per_fun = _signatures.setdefault(jitted._fun, {})
    sig = per_fun.get(cache_key)
    if sig is not None:
        return sig
    inner: list = []

    def probe(dyn, kw):
        inner.extend(k for _, k in _key_leaves((dyn, kw)))
        it = iter(dyn)
        full = [a if i in static_nums else next(it) for i, a in enumerate(args)]
        statics = {k: kwargs[k] for k in jitted._static_argnames if k in kwargs}
        return jitted._fun(*full, **kw, **statics)

    out_store: list = []

    def traced(dyn, kw):
        out = probe(dyn, kw)
        out_store.append([x for x in tree_leaves(out) if isinstance(x, PRNGKeyArray)])
        return out

    make_jaxpr(traced)(list(dyn_args), dyn_kwargs)
    by_data = {id(k._data): n for n, k in enumerate(inner)}
    forwards = [by_data.get(id(k._data)) for k in out_store[0]]
    sig = _Signature([k._consumed for k in inner], forwards)
    per_fun[cache_key] = sig
    return sig


def jit_call(jitted, args, kwargs):
    """Calls the jitted function `jitted` with the checker on: its key arguments must not be
    consumed where it consumes them; afterwards they are, and the keys it returns unchanged
    keep their argument's state. PROCEED: the call is to go on as without the checker."""
    if getattr(_replaying, "on", False):
        return PROCEED
    _, _, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
    keys = _key_leaves((dyn_args, dyn_kwargs))
    if not keys:
        return PROCEED
    sig = _signature(jitted, args, kwargs)
    for (index, k), sink in zip(keys, sig.sinks):
        if sink is not False and _is_consumed(k._consumed, sink):
            raise _error(k, "jit", index)
    states = []
    for (index, k), sink in zip(keys, sig.sinks):
        if sink is not False:
            consume(k, "jit", sink, index)
        states.append(k._consumed)
    out = _call(jitted, args, kwargs)
    out_keys = [k for _, k in _key_leaves(out)]
    for k, source in zip(out_keys, sig.forwards):
        if source is not None:
            k._consumed = states[source]
    return out


def _call(jitted, args, kwargs):
    _replaying.on = True
    try:
        return jitted(*args, **kwargs)
    finally:
        _replaying.on = False

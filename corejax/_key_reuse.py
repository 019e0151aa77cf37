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
_EAGER_NAMES = {"split": "random_split", "bits": "random_bits", "slice": "slice",
                "cond": "cond", "scan": "scan", "while": "while", "remat2": "remat2"}


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
    if open_scopes and open_scopes[-1].outside(keys):
        open_scopes[-1].defer(keys, op, mask, index)
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


# --- control flow: cond / switch, scan / map / fori_loop, while_loop -----------------------------
#
# Each body a control-flow function stages runs in a `_Scope` (`watch`). Keys the body receives
# as operands are its own: what it does to them is read off them afterwards. Keys it closes over
# belong to the caller: their consumption is deferred into the scope, because the rule of the
# boundary decides what it means (any branch of a cond consuming a key consumes it; a loop body
# consuming one raises, since every iteration would). What JAX 0.10.2 does, and so this:
# - cond / switch: a key any branch consumes is consumed for the caller; an output key every
#   branch returns unchanged is the operand itself (consuming one consumes the other); other
#   output keys are fresh.
# - scan / while_loop: a closed-over key, or a carried key the body returns unchanged, must not
#   be consumed by the body; a carried key the body consumes must be replaced by a fresh key
#   (one made in the body: split, fold_in, ...), not by another input. The caller's carried and
#   scanned-over keys are consumed as the body consumes them; an unchanged carry comes out as
#   the input key itself.

# the scopes of the bodies being staged, innermost last (PRNGKeyArray.__init__ reads it)
open_scopes: list = []


class _Scope:
    __slots__ = ("level", "born", "keep", "deferred")

    def __init__(self):
        from corejax.core import cur_level
        self.level = cur_level()
        self.born: set = set()
        self.keep: list = []          # the born keys, alive while their ids are in `born`
        self.deferred: dict = {}      # id(key) -> [key, mask, op, index]

    def add_born(self, keys) -> None:
        self.born.add(id(keys))
        self.keep.append(keys)

    def outside(self, keys) -> bool:
        """Whether `keys` is the caller's (closed over), not the body's own."""
        from corejax.core import Tracer
        if id(keys) in self.born:
            return False
        data = keys._data
        return not (isinstance(data, Tracer) and data._trace.main.level >= self.level)

    def defer(self, keys, op, mask, index) -> None:
        # a key consumed before the body is reported by the boundary, as JAX does
        entry = self.deferred.get(id(keys))
        pending = False if entry is None else entry[1]
        if _is_consumed(pending, mask):
            raise _error(keys, op, index)
        if entry is None:
            self.deferred[id(keys)] = [keys, mask, op, index]
        else:
            entry[1] = _merge(pending, mask)


class BodySignature:
    """What one staged body does with keys, by flattened leaf position: `sinks` (input leaf ->
    mask it consumes), `closed` (the caller's keys it consumes: [key, mask, op, index]),
    `forwards` (output leaf -> the input leaf it returns unchanged, keys or not) and
    `key_inputs` (input leaves that are keys)."""

    __slots__ = ("sinks", "closed", "forwards", "key_inputs")

    def __init__(self, sinks, closed, forwards, key_inputs):
        self.sinks, self.closed, self.forwards, self.key_inputs = sinks, closed, forwards, \
            key_inputs


def signatures():
    """A list that `watch` fills with the signatures of the bodies it stages, or None when the
    checker is off (then nothing is watched)."""
    return [] if config_values["debug_key_reuse"] else None


def watch(fun, record: list):
    """`fun` staged in a scope of its own; its signature is appended to `record`."""
    from corejax._tree_traced import tree_leaves

    def watched(*args):
        scope = _Scope()
        open_scopes.append(scope)
        try:
            out = fun(*args)
        finally:
            open_scopes.pop()
            if open_scopes:   # keys born in the body are the enclosing body's own too
                open_scopes[-1].born |= scope.born
                open_scopes[-1].keep += scope.keep
        keys = _key_leaves(args)
        in_leaves = tree_leaves(args)
        where = {id(x): i for i, x in enumerate(in_leaves)}
        forwards = {o: where[id(x)] for o, x in enumerate(tree_leaves(out)) if id(x) in where}
        record.append(BodySignature({i: k._consumed for i, k in keys if k._consumed is not False},
                                    list(scope.deferred.values()), forwards, [i for i, _ in keys]))
        return out

    watched.__name__ = getattr(fun, "__name__", "body")
    return watched


def _consume_closed(entries, op) -> None:
    for keys, mask, _, index in entries:
        consume(keys, op, mask, index)


def cond_operands(sigs, operands, num_consts: int) -> dict:
    """Applies the branches' signatures to the caller's `operands` of a cond / switch (whose
    first `num_consts` operands, after the index, are closed-over values); returns which output
    leaves are operand keys forwarded unchanged by every branch (for `alias`)."""
    keys = _key_leaves(operands)
    for leaf, k in keys:
        sink = False
        for sig in sigs:
            if leaf in sig.sinks:
                sink = sig.sinks[leaf] if sink is False else _merge(sink, sig.sinks[leaf])
        if sink is not False:
            consume(k, "cond", sink, 1 + num_consts + leaf)
    closed: dict = {}
    for sig in sigs:
        for keys_, mask, _, _ in sig.closed:
            entry = closed.setdefault(id(keys_), [keys_, False])
            entry[1] = mask if entry[1] is False else _merge(entry[1], mask)
    for n, (keys_, mask) in enumerate(closed.values()):
        consume(keys_, "cond", mask, 1 + n)
    common = set(sigs[0].forwards.items())
    for sig in sigs[1:]:
        common &= set(sig.forwards.items())
    key_leaves = {leaf: k for leaf, k in keys}
    return {out: key_leaves[i] for out, i in common if i in key_leaves}


def alias(result, forwarded: dict):
    """`result` with its key leaves at the positions of `forwarded` replaced by the caller's
    key objects they forward (so that consuming one consumes the other, as in JAX)."""
    if not forwarded:
        return result
    from corejax.tree_util import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(result)
    return tree_unflatten(tree, [forwarded.get(i, x) for i, x in enumerate(leaves)])


def _sig_repr(sinks, sources=(), forwards=()) -> str:
    parts = [f"Sink({i})" if m is True else f"Sink({i}, {m})" for i, m in sinks]
    parts += [f"Source({i})" for i in sources] + [f"Forward({i}, {o})" for i, o in forwards]
    return "KeyReuseSignature(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _jax_layout(sig: BodySignature, num_carry: int, extra_closed=()):
    """The body's signature as JAX prints it: loop-invariant carries come first (JAX makes them
    constants), then the closed-over keys, then the other carries and the scanned-over inputs."""
    invariant = [i for i in range(num_carry) if sig.forwards.get(i) == i]
    closed = list(extra_closed) + [e[0] for e in sig.closed]
    others = [i for i in sorted(set(sig.key_inputs) | set(range(num_carry)))
              if i not in invariant]
    pos = {i: n for n, i in enumerate(invariant)}
    pos.update({i: len(invariant) + len(closed) + n for n, i in enumerate(others)})
    sinks = [(pos[i], m) for i, m in sig.sinks.items()]
    sinks += [(len(invariant) + n, e[1]) for n, e in enumerate(sig.closed)]
    new_out = [o for o in range(num_carry) if o not in invariant]
    out_pos = {o: n for n, o in enumerate(new_out)}
    sources = [out_pos[o] for o in new_out if o in sig.key_inputs and o not in sig.forwards]
    forwards = [(pos[i], out_pos[o]) for o, i in sig.forwards.items()
                if o in out_pos and i in sig.key_inputs]
    return _sig_repr(sorted(sinks), sorted(sources), sorted(forwards))


def loop_operands(kind: str, body: BodySignature, carry_and_xs, num_carry: int,
                  num_consts: int, cond: BodySignature | None = None) -> dict:
    """Checks a scan (`kind` 'scan') or while_loop ('while') body that consumes keys, then
    consumes the caller's carried and scanned-over keys as the body does; returns the carried
    keys that come out unchanged (for `alias`)."""
    if cond is not None and (cond.sinks or cond.closed):
        sinks = sorted([(len(cond.closed) + i, m) for i, m in cond.sinks.items()]
                       + [(n, e[1]) for n, e in enumerate(cond.closed)])
        raise KeyReuseError("while_loop cond function leads to key reuse when repeatedly "
                            f"executed:   cond_signature={_sig_repr(sinks)}")
    invariant = {i for i in range(num_carry) if body.forwards.get(i) == i}
    const_sunk = body.closed or any(i in invariant for i in body.sinks)
    unmatched = any(i < num_carry and i in body.forwards for i in body.sinks)
    if const_sunk or unmatched:
        if kind == "while":
            raise KeyReuseError("while_loop body function leads to key reuse when repeatedly "
                                f"executed:   body_signature={_jax_layout(body, num_carry)}")
        why = ("key constants are repeatedly consumed" if const_sunk
               else "consumed inputs don't match sourced outputs")
        raise KeyReuseError(f"scan body function leads to key reuse when repeatedly executed, "
                            f"because {why}:\n  signature={_jax_layout(body, num_carry)}")
    keys = _key_leaves(carry_and_xs)
    for leaf, k in keys:
        sink = body.sinks.get(leaf, False)
        if sink is not False:
            if leaf >= num_carry and sink is not True:   # a mask over one slice of xs
                sink = np.broadcast_to(sink, k.shape)
            consume(k, kind, sink, num_consts + leaf)
    return {leaf: k for leaf, k in keys if leaf in invariant}

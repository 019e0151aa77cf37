"""Debugging inside transformed code: `corejax.debug.print`, `corejax.debug.callback` and
`corejax.debug.breakpoint` (a prompt on the host, in corejax/_debugger.py).

Both bind `debug_callback`, a primitive with no outputs whose impl calls a Python function on
the concrete (NumPy) values of its operands. Under jit it is a host step of the compiled
program, kept by every pass and run in program order; under vmap it calls the function once
per batch element, in order; under jvp/grad it sees the primal values (tangents pass through
untouched, since it has no outputs).
"""
from __future__ import annotations

import numpy as np

from corejax.core import Primitive
from corejax.compiler import registry
from corejax.transforms import ad, batching
from corejax._tree_traced import tree_flatten, tree_unflatten

__all__ = ["print", "callback", "breakpoint"]

_builtin_print = print

debug_callback_p = Primitive("debug_callback")
debug_callback_p.multiple_results = True


def _impl(*args, callback):
    callback(*[np.asarray(a) for a in args])
    return []


debug_callback_p.def_impl(_impl)
debug_callback_p.def_abstract_eval(lambda *avals, callback: [])
debug_callback_p.weak_type_rule = lambda *args, **params: []


def _jvp(primals, tangents, callback):
    return debug_callback_p.bind(*primals, callback=callback), []


def _transpose(cts, *args, callback):
    return [None] * len(args)


def _batch(axis_size, vals, dims, callback):
    def per_element(*arrays):
        for i in range(axis_size):
            callback(*[a if d is None else np.take(a, i, axis=d)
                       for a, d in zip(arrays, dims)])

    per_element.__name__ = getattr(callback, "__name__", "callback")
    return debug_callback_p.bind(*vals, callback=per_element), []


_batch.needs_axis_size = True
ad.primitive_jvps[debug_callback_p] = _jvp
ad.primitive_transposes[debug_callback_p] = _transpose
batching.primitive_batchers[debug_callback_p] = _batch
registry.def_effectful(debug_callback_p)
registry.def_kernel(debug_callback_p, ("host",))


def callback(fn, *args, ordered: bool = False, partitioned: bool = False, **kwargs) -> None:
    """Calls `fn(*args, **kwargs)` with concrete NumPy values, also inside jit/vmap/grad.
    `ordered` and `partitioned` are JAX's keywords: callbacks here always run in program order
    on the host, so both are accepted and need nothing more."""
    del ordered, partitioned
    leaves, tree = tree_flatten((args, kwargs))

    def flat_callback(*vals):
        a, kw = tree_unflatten(tree, list(vals))
        fn(*a, **kw)

    flat_callback.__name__ = getattr(fn, "__name__", "callback")
    debug_callback_p.bind(*leaves, callback=flat_callback)


def print(fmt: str, *args, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          **kwargs) -> None:
    """Prints `fmt.format(*args, **kwargs)` with the runtime values of traced arrays
    (`ordered`, `partitioned`: as for `callback`)."""
    del ordered, partitioned
    def _format(*a, **kw):
        _builtin_print(fmt.format(*a, **kw))

    callback(_format, *args, **kwargs)


from corejax._debugger import breakpoint  # noqa: E402  (uses callback above)

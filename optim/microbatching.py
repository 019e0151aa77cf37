"""optax.microbatching: evaluating a function of a batch one microbatch at a time in a
`fori_loop` (bounded memory) and combining the results by an accumulator (sum, mean,
running mean or concatenation), and per-example gradients computed that way (micro_grad).

A batch of size B split into microbatches of size m takes examples i, i + B/m, i + 2B/m, ...
into microbatch i (a Fortran-order reshape of the batch axis, as Optax does), so CONCAT
returns the outputs in the original batch order."""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
from typing import Any, Callable

import corejax as jax
import corejax.numpy as jnp
from corejax import lax

__all__ = ["AccumulationType", "Accumulator", "micro_grad", "micro_vmap", "microbatch",
           "reshape_batch_axis"]

_map = jax.tree_util.tree_map
IndividualOutputs = collections.namedtuple("Aux", ["values", "metrics", "aux"])


@dataclasses.dataclass(frozen=True)
class Accumulator:
    """How microbatch outputs combine: `init(value_shape) -> carry`, `update(carry, value,
    index) -> carry`, `finalize(carry) -> result`, and `aggregate(stacked values)` for the
    values of one vmapped microbatch."""
    init: Callable[[Any], Any]
    update: Callable[[Any, Any, int], Any]
    finalize: Callable[[Any], Any]
    aggregate: Callable[[Any], Any]


class AccumulationType(enum.Enum):
    """The built-in accumulators."""
    MEAN = enum.auto()
    SUM = enum.auto()
    RUNNING_MEAN = enum.auto()
    CONCAT = enum.auto()


def _floating_only(fn):
    def checked(*args, **kwargs):
        dtypes = jax.tree_util.tree_leaves(_map(lambda x: x.dtype, (args, kwargs)))
        if not all(jnp.issubdtype(d, jnp.floating) for d in dtypes):
            raise ValueError("MEAN and RUNNING_MEAN Accumulators require floating-point "
                             "values.")
        return fn(*args, **kwargs)
    return checked


def _split_axis(x, microbatch_size, axis):
    # Fortran-order split of axis into (B / m, m): element b goes to (b % (B/m), b // (B/m)).
    shape = x.shape[:axis] + (microbatch_size, -1) + x.shape[axis + 1:]
    return jnp.swapaxes(x.reshape(shape), axis, axis + 1)


def reshape_batch_axis(tree, microbatch_size: int, axis: int = 0):
    """Each leaf's batch axis `axis` (size B) split into `(B // microbatch_size,
    microbatch_size)`, microbatch i holding examples i, i + B/m, ... (Fortran order)."""
    return _map(lambda x: _split_axis(x, microbatch_size, axis), tree)


def _lift(acc: Accumulator) -> Accumulator:
    return Accumulator(lambda value: _map(acc.init, value),
                       lambda carry, value, i: _map(lambda c, v: acc.update(c, v, i), carry,
                                                    value),
                       lambda carry: _map(acc.finalize, carry),
                       lambda values: _map(acc.aggregate, values))


def _compose(accumulators) -> Accumulator:
    is_acc = lambda a: isinstance(a, Accumulator)  # noqa: E731
    return Accumulator(
        lambda values: _map(lambda a, v: a.init(v), accumulators, values, is_leaf=is_acc),
        lambda carry, value, i: _map(lambda a, c, v: a.update(c, v, i), accumulators, carry,
                                     value, is_leaf=is_acc),
        lambda carry: _map(lambda a, c: a.finalize(c), accumulators, carry, is_leaf=is_acc),
        lambda values: _map(lambda a, v: a.aggregate(v), accumulators, values,
                            is_leaf=is_acc))


def _zeros(value):
    # Works on ShapeDtypeStruct too (what eval_shape gives for a microbatch's output).
    return jnp.zeros(tuple(value.shape), value.dtype)


def _sum():
    return _lift(Accumulator(_zeros, lambda c, v, _: c + v, lambda c: c,
                             functools.partial(jnp.sum, axis=0)))


def _mean(num_microbatches):
    if num_microbatches <= 0:
        raise ValueError(f"num_microbatches={num_microbatches!r} must be positive.")
    return _lift(Accumulator(_floating_only(_zeros), lambda c, v, _: c + v,
                             lambda c: c / num_microbatches,
                             functools.partial(jnp.mean, axis=0)))


def _running_mean():
    def update(carry, value, index):
        keep = index / (index + 1)
        return carry * keep + value * (1 - keep)
    return _lift(Accumulator(_floating_only(_zeros), update, lambda c: c,
                             functools.partial(jnp.mean, axis=0)))


def _concat(num_microbatches):
    if num_microbatches <= 0:
        raise ValueError(f"num_microbatches={num_microbatches!r} must be positive.")

    def init(value):
        return jnp.zeros((num_microbatches,) + tuple(value.shape), value.dtype)

    def finalize(carry):
        # Inverse of the Fortran-order split: (B/m, m, ...) back to (B, ...).
        return jnp.swapaxes(carry, 0, 1).reshape((-1,) + carry.shape[2:])
    return _lift(Accumulator(init, lambda c, v, i: c.at[i].set(v), finalize, lambda x: x))


def _canonicalize(tree, num_microbatches):
    def one(acc):
        if isinstance(acc, Accumulator):
            return acc
        if acc is AccumulationType.MEAN:
            return _mean(num_microbatches)
        if acc is AccumulationType.SUM:
            return _sum()
        if acc is AccumulationType.RUNNING_MEAN:
            return _running_mean()
        if acc is AccumulationType.CONCAT:
            return _concat(num_microbatches)
        raise ValueError(f"Unknown accumulator: {acc}; use an AccumulationType or an "
                         "Accumulator.")
    is_leaf = lambda a: isinstance(a, (Accumulator, AccumulationType))  # noqa: E731
    return _compose(_map(one, tree, is_leaf=is_leaf))


def _reshape_args(microbatch_size, argnums, argnames, in_axes, args, kwargs):
    args, kwargs = list(args), dict(kwargs)
    batched = [args[i] for i in argnums] + [kwargs[n] for n in argnames]
    sizes = jax.tree_util.tree_leaves(
        [_map(lambda x, ax=ax: x.shape[ax], sub) for ax, sub in zip(in_axes, batched)])
    if len(set(sizes)) > 1:
        raise ValueError(f"Batch Arguments must have equal-size batch axes, found "
                         f"{tuple(sizes)}.")
    batch_size = sizes[0]
    if batch_size % microbatch_size != 0:
        raise ValueError(f"batch_size={batch_size!r} must be divisible by "
                         f"microbatch_size={microbatch_size!r}.")
    for i, ax in zip(argnums, in_axes):
        args[i] = reshape_batch_axis(args[i], microbatch_size, ax)
    for name, ax in zip(argnames, in_axes[len(argnums):]):
        kwargs[name] = reshape_batch_axis(kwargs[name], microbatch_size, ax)
    return tuple(args), kwargs, batch_size


def microbatch(fun, argnums, microbatch_size, accumulator=AccumulationType.SUM, *,
               argnames=(), in_axes=0, num_real_microbatches=None):
    """`fun` evaluated on microbatches of `microbatch_size` examples of its batch arguments
    (`argnums` / `argnames`, batch axis `in_axes`) in a fori_loop, the outputs combined by
    `accumulator` (a pytree of AccumulationType / Accumulator matching fun's output).
    `num_real_microbatches` stops early (the rest are padding). `microbatch_size=None`: fun."""
    if microbatch_size is None:
        return fun
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    argnames = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    if isinstance(in_axes, int):
        in_axes = (in_axes,) * (len(argnums) + len(argnames))

    def microbatched(*args, **kwargs):
        args, kwargs, batch_size = _reshape_args(microbatch_size, argnums, argnames, in_axes,
                                                 args, kwargs)
        count = batch_size // microbatch_size
        acc = _canonicalize(accumulator, count)

        def on_microbatch(index):
            call_args, call_kwargs = list(args), dict(kwargs)
            pick = lambda ax: functools.partial(jnp.take, indices=index, axis=ax)  # noqa
            for i, ax in zip(argnums, in_axes):
                call_args[i] = _map(pick(ax), call_args[i])
            for name, ax in zip(argnames, in_axes[len(argnums):]):
                call_kwargs[name] = _map(pick(ax), call_kwargs[name])
            return fun(*call_args, **call_kwargs)

        bound = count if num_real_microbatches is None else num_real_microbatches
        carry = acc.init(jax.eval_shape(on_microbatch, 0))
        carry = lax.fori_loop(0, bound, lambda i, c: acc.update(c, on_microbatch(i), i), carry)
        return acc.finalize(carry)
    return microbatched


def micro_vmap(fun, in_axes=0, out_axes=0, *, microbatch_size=None, vmap_fn=jax.vmap,
               accumulator=AccumulationType.CONCAT, num_real_microbatches=None):
    """`vmap(fun, in_axes)` evaluated `microbatch_size` examples at a time; each vmapped
    microbatch is reduced by the accumulator's `aggregate`, then accumulated."""
    if out_axes != 0:
        raise NotImplementedError("out_axis != 0 is not currently supported")
    in_axes = (in_axes,) if isinstance(in_axes, int) else tuple(in_axes)

    def vmap_then_reduce(*args, kwargs):
        out = vmap_fn(fun, in_axes, out_axes)(*args, **kwargs)
        size = jax.tree_util.tree_leaves(out)[0].shape[0]
        return _canonicalize(accumulator, size).aggregate(out)
    batched = tuple(i for i, ax in enumerate(in_axes) if ax is not None)
    micro = microbatch(vmap_then_reduce, argnums=batched, argnames="kwargs",
                       microbatch_size=microbatch_size, accumulator=accumulator,
                       in_axes=tuple(ax for ax in in_axes if ax is not None) + (0,),
                       num_real_microbatches=num_real_microbatches)
    return lambda *args, **kwargs: micro(*args, kwargs=kwargs)


def micro_grad(fun, has_aux: bool = False, argnums=0, *, batch_argnums=1,
               keep_batch_dim: bool = True, microbatch_size=None,
               accumulator=AccumulationType.SUM, transform_fn=lambda x: x,
               metrics_fn=lambda x: None, num_real_microbatches=None):
    """Per-example gradients of `fun` (vmapped over `batch_argnums`), each passed through
    `transform_fn` (e.g. clipping) and accumulated (default: summed), computed
    `microbatch_size` examples at a time. Returns `(accumulated, Aux(values, metrics, aux))`
    with the per-example values, `metrics_fn(grad)` and aux concatenated."""
    batch_argnums = (batch_argnums,) if isinstance(batch_argnums, int) else batch_argnums
    with_aux = fun if has_aux else (lambda *a, **k: (fun(*a, **k), None))
    value_and_grad = jax.value_and_grad(with_aux, argnums, has_aux=True)

    def grad_fn(*args, **kwargs):
        (value, aux), grad = value_and_grad(*args, **kwargs)
        return transform_fn(grad), IndividualOutputs(values=value, metrics=metrics_fn(grad),
                                                     aux=aux)
    in_axes = [None] * (max(batch_argnums) + 1)
    for i in batch_argnums:
        in_axes[i] = 0
    micro = micro_vmap(grad_fn, in_axes=in_axes,
                       accumulator=(accumulator, AccumulationType.CONCAT),
                       microbatch_size=microbatch_size,
                       num_real_microbatches=num_real_microbatches)
    if not keep_batch_dim:
        return micro

    def with_batch_dim(*args, **kwargs):
        args = list(args)
        for i in batch_argnums:
            args[i] = _map(lambda x: jnp.expand_dims(x, axis=1), args[i])
        return micro(*args, **kwargs)
    return with_batch_dim

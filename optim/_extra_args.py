"""Transforms whose update takes extra keyword arguments (a loss `value`, a `grad_fn`, ...).

Optax's protocol: a `GradientTransformationExtraArgs` is a `GradientTransformation` whose update
accepts `**extra_args`; `with_extra_args_support` lets a plain transform sit next to such ones
by dropping the extra arguments it does not take. The protocol's home is `optim.base`; this
module takes it from there and only defines it when `optim.base` does not (yet) have it.
"""
from __future__ import annotations

from optim import base

__all__ = ["GradientTransformationExtraArgs", "with_extra_args_support"]

if hasattr(base, "GradientTransformationExtraArgs") and hasattr(base, "with_extra_args_support"):
    GradientTransformationExtraArgs = base.GradientTransformationExtraArgs
    with_extra_args_support = base.with_extra_args_support
else:
    class GradientTransformationExtraArgs(base.GradientTransformation):
        """A GradientTransformation whose `update(updates, state, params=None, **extra_args)`
        takes keyword arguments beyond the params."""

    def with_extra_args_support(tx: base.GradientTransformation
                                ) -> GradientTransformationExtraArgs:
        """`tx` itself if its update takes extra arguments, else `tx` with an update that
        accepts and ignores them."""
        if isinstance(tx, GradientTransformationExtraArgs):
            return tx

        def update(updates, state, params=None, **extra_args):
            del extra_args
            return tx.update(updates, state, params)
        return GradientTransformationExtraArgs(tx.init, update)

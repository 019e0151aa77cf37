"""flax.training.train_state: the usual training state as one pytree.

    state = TrainState.create(apply_fn=model.apply, params=params, tx=optim.sgd(0.1, 0.9))
    state = state.apply_gradients(grads=grads)

`apply_fn` and `tx` are static fields (part of the tree structure), `step`, `params` and
`opt_state` are children, so a TrainState passes through jit/grad and checkpoints whole.
"""
from __future__ import annotations

from typing import Any, Callable

from nn import struct
from optim import apply_updates

__all__ = ["TrainState", "OVERWRITE_WITH_GRADIENT"]

# Params under this key (next to 'params') are replaced by their gradients instead of being
# updated by `tx` (Flax's convention for e.g. fp8 scaling statistics).
OVERWRITE_WITH_GRADIENT = "_overwrite_with_gradient"


class TrainState(struct.PyTreeNode):
    """step, apply_fn, params, tx (an optim GradientTransformation) and its opt_state."""
    step: Any
    apply_fn: Callable = struct.field(pytree_node=False)
    params: Any = struct.field(pytree_node=True)
    tx: Any = struct.field(pytree_node=False)
    opt_state: Any = struct.field(pytree_node=True)

    def apply_gradients(self, *, grads, **kwargs) -> "TrainState":
        """One optimizer step: step + 1, params and opt_state updated by `tx` with `grads`;
        `kwargs` replace further fields."""
        overwrite = OVERWRITE_WITH_GRADIENT in grads
        grads_opt = grads["params"] if overwrite else grads
        params_opt = self.params["params"] if overwrite else self.params
        updates, new_opt_state = self.tx.update(grads_opt, self.opt_state, params_opt)
        new_params = apply_updates(params_opt, updates)
        if overwrite:
            new_params = {"params": new_params,
                          OVERWRITE_WITH_GRADIENT: grads[OVERWRITE_WITH_GRADIENT]}
        return self.replace(step=self.step + 1, params=new_params, opt_state=new_opt_state,
                            **kwargs)

    @classmethod
    def create(cls, *, apply_fn, params, tx, **kwargs) -> "TrainState":
        """A state at step 0 with `tx.init(params)` as optimizer state."""
        params_opt = params["params"] if OVERWRITE_WITH_GRADIENT in params else params
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx,
                   opt_state=tx.init(params_opt), **kwargs)

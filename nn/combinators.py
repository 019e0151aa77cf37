"""Sequential: applies layers (modules or plain functions) one after another."""
from __future__ import annotations

from typing import Callable, Sequence

from nn.module import Module

__all__ = ["Sequential"]


class Sequential(Module):
    """Each layer's output feeds the next: a tuple is splatted as positional arguments, a dict
    as keyword arguments. Module layers are named layers_0, layers_1, ... by position."""
    layers: Sequence[Callable]

    def __call__(self, *args, **kwargs):
        if not self.layers:
            raise ValueError(f'Sequential "{self.path}" has no layers.')
        out = self.layers[0](*args, **kwargs)
        for layer in self.layers[1:]:
            if isinstance(out, tuple):
                out = layer(*out)
            elif isinstance(out, dict):
                out = layer(**out)
            else:
                out = layer(out)
        return out

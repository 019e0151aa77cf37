"""Composing transforms: in sequence (chain) or by parameter group (multi_transform)."""
from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping, NamedTuple, Union

import corejax as jax

from optim.base import GradientTransformation
from optim.wrappers import masked

__all__ = ["chain", "multi_transform", "MultiTransformState"]


def _check_transform(t, where: str) -> None:
    if not (callable(getattr(t, "init", None)) and callable(getattr(t, "update", None))):
        raise TypeError(f"{where} expects GradientTransformations (objects with init and update), "
                        f"got {type(t).__name__}: {t!r}")


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Applies `transforms` one after the other; the state is the tuple of their states."""
    for t in transforms:
        _check_transform(t, "chain")

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if len(state) != len(transforms):
            raise ValueError(f"chain of {len(transforms)} transforms got a state with "
                             f"{len(state)} entries; was it made by this chain's init?")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


class MultiTransformState(NamedTuple):
    inner_states: Mapping[Hashable, Any]


def multi_transform(transforms: Mapping[Hashable, GradientTransformation],
                    param_labels: Union[Any, Callable[[Any], Any]]) -> GradientTransformation:
    """Applies `transforms[label]` to the parameters labelled `label`.

    `param_labels` is a pytree of labels shaped like the params (or a prefix of them), or a
    callable params -> such a tree.
    """
    for t in transforms.values():
        _check_transform(t, "multi_transform")

    def labels_for(tree):
        labels = param_labels(tree) if callable(param_labels) else param_labels
        used = set(jax.tree_util.tree_leaves(labels))
        missing = used - set(transforms)
        if missing:
            raise ValueError(
                f"multi_transform: parameters are labelled {sorted(map(repr, missing))} but "
                f"no transform has that label (transforms: {sorted(map(repr, transforms))}). "
                "Add a transform for every label (optim.set_to_zero() to freeze a group).")
        return labels

    def group_mask(labels, group):
        return jax.tree_util.tree_map(lambda label: label == group, labels)

    def init(params):
        labels = labels_for(params)
        return MultiTransformState({group: masked(t, group_mask(labels, group)).init(params)
                                    for group, t in transforms.items()})

    def update(updates, state, params=None):
        labels = labels_for(updates)
        new_states = {}
        for group, t in transforms.items():
            updates, new_states[group] = masked(t, group_mask(labels, group)).update(
                updates, state.inner_states[group], params)
        return updates, MultiTransformState(new_states)
    return GradientTransformation(init, update)

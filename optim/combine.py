"""Composing transforms: in sequence (chain, named_chain) or by parameter group (partition)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, Mapping, NamedTuple, Union

import corejax as jax

from optim.base import (GradientTransformation, GradientTransformationExtraArgs, set_to_zero,
                        with_extra_args_support)
from optim.wrappers import masked

__all__ = ["chain", "named_chain", "partition", "PartitionState", "multi_transform",
           "MultiTransformState", "selective_transform"]


def _check_transform(t, where: str) -> None:
    if not (callable(getattr(t, "init", None)) and callable(getattr(t, "update", None))):
        raise TypeError(f"{where} expects GradientTransformations (objects with init and update), "
                        f"got {type(t).__name__}: {t!r}")


def chain(*transforms: GradientTransformation) -> GradientTransformationExtraArgs:
    """Applies `transforms` one after the other; the state is the tuple of their states.
    Extra keyword arguments of `update` reach every transform that takes them."""
    for t in transforms:
        _check_transform(t, "chain")
    transforms = tuple(with_extra_args_support(t) for t in transforms)

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None, **extra_args):
        if len(state) != len(transforms):
            raise ValueError(f"chain of {len(transforms)} transforms got a state with "
                             f"{len(state)} entries; was it made by this chain's init?")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params, **extra_args)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformationExtraArgs(init, update)


def named_chain(*transforms: tuple) -> GradientTransformationExtraArgs:
    """Like `chain`, given `(name, transform)` pairs; the state is an OrderedDict name -> state."""
    names = []
    for entry in transforms:
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)):
            raise TypeError(f"named_chain expects (name, transform) pairs with a str name, got "
                            f"{entry!r}")
        _check_transform(entry[1], "named_chain")
        names.append(entry[0])
    if len(names) != len(set(names)):
        raise ValueError(f"named_chain: names must be unique, got {names}; rename the "
                         "repeated ones.")
    pairs = [(name, with_extra_args_support(t)) for name, t in transforms]

    def init(params):
        return OrderedDict((name, t.init(params)) for name, t in pairs)

    def update(updates, state, params=None, **extra_args):
        new_state = OrderedDict()
        for name, t in pairs:
            updates, new_state[name] = t.update(updates, state[name], params, **extra_args)
        return updates, new_state
    return GradientTransformationExtraArgs(init, update)


class PartitionState(NamedTuple):
    inner_states: Mapping[Hashable, Any]


def partition(transforms: Mapping[Hashable, GradientTransformation],
              param_labels: Union[Any, Callable[[Any], Any]], *,
              mask_compatible_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Applies `transforms[label]` to the parameters labelled `label`.

    `param_labels` is a pytree of labels shaped like the params (or a prefix of them), or a
    callable params -> such a tree. With `mask_compatible_extra_args`, extra arguments shaped
    like the updates are masked for each group as the updates are.
    """
    for t in transforms.values():
        _check_transform(t, "partition")
    transforms = {k: with_extra_args_support(t) for k, t in transforms.items()}

    def labels_for(tree):
        labels = param_labels(tree) if callable(param_labels) else param_labels
        used = set(jax.tree_util.tree_leaves(labels))
        missing = used - set(transforms)
        if missing:
            raise ValueError(
                f"partition: parameters are labelled {sorted(map(repr, missing))} but "
                f"no transform has that label (transforms: {sorted(map(repr, transforms))}). "
                "Add a transform for every label (optim.set_to_zero() to freeze a group).")
        return labels

    def group_transform(labels, group):
        mask = jax.tree_util.tree_map(lambda label: label == group, labels)
        return masked(transforms[group], mask,
                      mask_compatible_extra_args=mask_compatible_extra_args)

    def init(params):
        labels = labels_for(params)
        return PartitionState({group: group_transform(labels, group).init(params)
                               for group in transforms})

    def update(updates, state, params=None, **extra_args):
        labels = labels_for(updates)
        new_states = {}
        for group in transforms:
            updates, new_states[group] = group_transform(labels, group).update(
                updates, state.inner_states[group], params, **extra_args)
        return updates, PartitionState(new_states)
    return GradientTransformationExtraArgs(init, update)


def selective_transform(optimizer: GradientTransformation, *, freeze_mask
                        ) -> GradientTransformationExtraArgs:
    """`optimizer` on the parameters where `freeze_mask` is False; zero updates (and no state)
    where it is True. `freeze_mask` is a bool or a pytree of bools shaped like the params."""
    def labels(params):
        del params
        return jax.tree_util.tree_map(lambda frozen: "freeze" if frozen else "train",
                                      freeze_mask)
    return partition({"train": optimizer, "freeze": set_to_zero()}, param_labels=labels)


# Optax keeps the former names as aliases of the same objects.
multi_transform = partition
MultiTransformState = PartitionState

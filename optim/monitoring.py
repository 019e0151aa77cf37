"""Transforms that record measurements of the updates in their state, leaving them unchanged."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from optim.base import (GradientTransformation, GradientTransformationExtraArgs, stateless,
                        with_extra_args_support)
from optim.combine import chain
from optim.transform import ema

__all__ = ["snapshot", "SnapshotState", "monitor", "MonitorState", "measure_with_ema"]


class SnapshotState(NamedTuple):
    measurement: dict


def snapshot(measure_name: str, measure: Callable[[Any], Any]) -> GradientTransformation:
    """Keeps `{measure_name: measure(updates)}` of the latest updates (of the params at init)."""
    def init(params):
        return SnapshotState({measure_name: measure(params)})

    def update(updates, state, params=None):
        del state, params
        return updates, SnapshotState({measure_name: measure(updates)})
    return GradientTransformation(init, update)


class MonitorState(NamedTuple):
    measurements: dict
    measure_states: tuple


def monitor(measures: dict) -> GradientTransformationExtraArgs:
    """Records `measures` (name -> function of the updates, or a transform whose output is the
    measurement) of each update in `state.measurements` (empty before the first update)."""
    transforms = {}
    for name, measure in measures.items():
        if callable(measure) and not hasattr(measure, "init"):
            measure = stateless(lambda u, _, m=measure: m(u))
        transforms[name] = with_extra_args_support(measure)
    names = tuple(transforms)

    def init(params):
        return MonitorState({}, tuple(transforms[n].init(params) for n in names))

    def update(updates, state, params=None, **extra_args):
        measurements, states = {}, []
        for name, s in zip(names, state.measure_states):
            measurements[name], s = transforms[name].update(updates, s, params, **extra_args)
            states.append(s)
        return updates, MonitorState(measurements, tuple(states))
    return GradientTransformationExtraArgs(init, update)


def measure_with_ema(measure: Callable[[Any], Any], decay, debias: bool = True,
                     accumulator_dtype=None) -> GradientTransformationExtraArgs:
    """A measurement transform for `monitor`: the (debiased) exponential moving average of
    `measure(updates)`. Used alone, it replaces the updates by that average."""
    average = ema(decay, debias, accumulator_dtype)
    measured_average = GradientTransformation(lambda params: average.init(measure(params)),
                                              average.update)
    return chain(stateless(lambda updates, _: measure(updates)), measured_average)

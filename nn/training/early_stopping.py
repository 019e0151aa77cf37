"""flax.training.early_stopping: stop when a metric has not improved for `patience` updates."""
from __future__ import annotations

import math

from nn import struct

__all__ = ["EarlyStopping"]


class EarlyStopping(struct.PyTreeNode):
    """`state = state.update(metric)` after each evaluation (lower is better); stop when
    `state.should_stop`. An improvement must beat the best metric by more than `min_delta`."""
    min_delta: float = 0
    patience: int = 0
    best_metric: float = float("inf")
    patience_count: int = 0
    should_stop: bool = False
    has_improved: bool = False

    def reset(self) -> "EarlyStopping":
        return self.replace(best_metric=float("inf"), patience_count=0, should_stop=False,
                            has_improved=False)

    def update(self, metric) -> "EarlyStopping":
        if math.isinf(self.best_metric) or self.best_metric - metric > self.min_delta:
            return self.replace(best_metric=metric, patience_count=0, has_improved=True)
        return self.replace(patience_count=self.patience_count + 1,
                            should_stop=self.patience_count >= self.patience or self.should_stop,
                            has_improved=False)

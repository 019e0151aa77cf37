"""Helpers shared by the distributions of corejax.scipy.stats."""
from __future__ import annotations

from corejax.numpy._core import promote_dtypes_inexact

__all__ = ["promote_args_inexact"]


def promote_args_inexact(*args):
    """The arguments as arrays of their common inexact dtype (weak if all were Python
    scalars); they broadcast against each other in the arithmetic that follows."""
    return promote_dtypes_inexact(*args)

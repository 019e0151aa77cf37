"""optax.assignment: the linear assignment problem (minimum-cost matching of rows to
columns of a cost matrix) by the Hungarian algorithm with potentials, in jnp loops so it runs
under jit. The two functions give the same matching, in Optax's two output orders."""
from __future__ import annotations

import corejax.numpy as jnp
from corejax import lax

__all__ = ["hungarian_algorithm", "base_hungarian_algorithm"]


def _column_owners(cost):
    """For a cost matrix with rows <= columns: `owner` (columns + 1,), owner[j] the 1-based
    row matched to column j - 1 (0: none); entry 0 is scratch. Rows are added one at a time,
    each by a shortest augmenting path (Dijkstra on reduced costs u, v)."""
    rows, cols = cost.shape
    cost = cost.astype(jnp.float32) if not jnp.issubdtype(cost.dtype, jnp.floating) else cost
    inf = jnp.asarray(jnp.inf, cost.dtype)

    def add_row(carry, row):
        u, v, owner = carry
        owner = owner.at[0].set(row + 1)

        def not_done(state):
            _, _, _, _, _, col = state
            return owner[col] != 0

        def grow(state):
            u, v, used, dist, back, col = state
            used = used.at[col].set(True)
            free = jnp.logical_not(used[1:])
            at_row = owner[col]
            reduced = cost[at_row - 1, :] - u[at_row] - v[1:]
            reduced = jnp.where(free, reduced, inf)
            closer = reduced < dist
            back = jnp.where(closer, col, back)
            dist = jnp.where(closer, reduced, dist)
            masked = jnp.where(free, dist, inf)
            nxt = jnp.argmin(masked) + 1
            delta = jnp.min(masked)
            # Potentials: rows on the tree go up by delta (row `rows + 1` is a dump slot for
            # columns off the tree), their columns down; the rest of dist shrinks by delta.
            u = u.at[jnp.where(used, owner, rows + 1)].add(delta)
            v = jnp.where(used, v - delta, v)
            dist = jnp.where(free, dist - delta, dist)
            return u, v, used, dist, back, nxt

        state = (u, v, jnp.zeros(cols + 1, bool), jnp.full(cols, inf, cost.dtype),
                 jnp.zeros(cols, jnp.int32), jnp.asarray(0, jnp.int32))
        u, v, _, _, back, col = lax.while_loop(not_done, grow, state)

        def unwind(state):
            owner, col = state
            prev = back[col - 1]
            return owner.at[col].set(owner[prev]), prev
        owner, _ = lax.while_loop(lambda s: s[1] != 0, unwind, (owner, col))
        return (u, v, owner), None

    init = (jnp.zeros(rows + 2, cost.dtype), jnp.zeros(cols + 1, cost.dtype),
            jnp.zeros(cols + 1, jnp.int32))
    (_, _, owner), _ = lax.scan(add_row, init, jnp.arange(rows, dtype=jnp.int32))
    return owner


def _empty():
    return jnp.zeros(0, jnp.int32), jnp.zeros(0, jnp.int32)


def hungarian_algorithm(cost_matrix):
    """`(rows, cols)`: the matching of least total cost `cost_matrix[rows, cols].sum()`, one
    pair per row or column (whichever are fewer). Square: columns in order; wide: rows in
    decreasing order; tall: the transpose's pairs swapped (Optax's order)."""
    cost_matrix = jnp.asarray(cost_matrix)
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return _empty()
    tall = cost_matrix.shape[0] > cost_matrix.shape[1]
    cost = cost_matrix.T if tall else cost_matrix
    rows, cols = cost.shape
    owner = _column_owners(cost)[1:]
    if rows == cols:
        matched, columns = owner, jnp.arange(cols, dtype=jnp.int32)
    else:
        matched, columns = lax.top_k(owner, rows)
    matched = matched - 1
    return (columns, matched) if tall else (matched, columns)


def base_hungarian_algorithm(cost_matrix):
    """`(rows, cols)` of the least-cost matching, ordered by row (the simpler of Optax's two
    implementations; the same matching as hungarian_algorithm)."""
    cost_matrix = jnp.asarray(cost_matrix)
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return _empty()
    tall = cost_matrix.shape[1] < cost_matrix.shape[0]
    cost = cost_matrix.T if tall else cost_matrix
    rows, cols = cost.shape
    owner = _column_owners(cost)
    # Row r's column: scatter each column index to its owner (unowned columns hit slot 0).
    col_of_row = jnp.zeros(rows + 1, jnp.int32).at[owner[1:]].set(
        jnp.arange(cols, dtype=jnp.int32))[1:]
    if tall:
        order = jnp.argsort(col_of_row)
        return col_of_row[order], order.astype(jnp.int32)
    return jnp.arange(rows, dtype=jnp.int32), col_of_row

"""Lowering rule tables, filled in by each primitive's module right after its definition.

- `elementwise_lowerings[prim](ctx, *operand_exprs, **params) -> str`: a scalar Numba expression
  for one element, which the fusion pass inlines into a loop nest. `ctx` tells the operand and
  result dtypes and the backend, and names the math functions to call (`ctx.math('exp', x)`).
- `kernel_lowerings[prim]`: for primitives that are not elementwise, a tuple the CPU compiler
  dispatches on: ("reduce", monoid) fuses as a group's trailing reduction (add/mul/max/min/
  and/or); ("dot_general",) is one BLAS matmul; ("layout",) is a NumPy view or copy in the
  executor (broadcast_in_dim, unit-dimension reshapes and iota are also folded into kernel
  indexing); any other entry, and any primitive without one, runs its NumPy impl as a host
  step (control flow evaluates its sub-jaxprs there).
- `call_params[prim]`: for call-like primitives, the parameter holding the body that the
  compiler inlines.
"""
from __future__ import annotations

from typing import Callable

elementwise_lowerings: dict = {}
kernel_lowerings: dict = {}
# Call-like primitives (jit, custom_jvp_call, custom_vjp_call, checkpoint): the name of the
# parameter holding the ClosedJaxpr body they evaluate; the compiler inlines the body.
call_params: dict = {}
# Primitives with side effects (debug callbacks): never removed, merged or folded by passes,
# always run as host steps in program order.
effectful: set = set()
# Primitives whose eager evaluation places results over a mesh (shard_map, reshard): a program
# holding one is evaluated equation by equation where it runs eagerly, not compiled, since a
# compiled program returns its results on one device.
mesh_placing: set = set()


def def_elementwise(prim, rule: Callable[..., str]) -> None:
    elementwise_lowerings[prim] = rule


def def_kernel(prim, rule) -> None:
    kernel_lowerings[prim] = rule


def def_call(prim, jaxpr_param: str) -> None:
    call_params[prim] = jaxpr_param


def def_effectful(prim) -> None:
    effectful.add(prim)


def def_mesh_placing(prim) -> None:
    mesh_placing.add(prim)

"""Ahead-of-time stages of a jitted function, as JAX names them:
`jit(f).trace(*args)` -> `Traced` (the Jaxpr and output shapes), `.lower()` -> `Lowered` (the
program for one backend; `as_text()` shows the compiler's plan and kernels), `.compile()` ->
`Compiled` (callable with arguments of the traced types; `cost_analysis()`,
`memory_analysis()`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from corejax import core
from corejax.core import ClosedJaxpr, ShapedArray, get_aval
from corejax._tree_traced import tree_flatten, tree_unflatten

__all__ = ["Wrapped", "Traced", "Lowered", "Compiled", "ArgInfo", "CompilerOptions",
           "CompiledMemoryStats"]

CompilerOptions = dict  # JAX's alias: compiler options by name (corejax takes none)


class ArgInfo(NamedTuple):
    """One argument of a traced call: its abstract value and whether it is donated."""
    aval: ShapedArray
    donated: bool

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype


class CompiledMemoryStats(NamedTuple):
    generated_code_size_in_bytes: int
    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0


class Wrapped:
    """The protocol of a jitted function: callable, with `trace` and `lower`."""

    def __call__(self, *args, **kwargs):
        raise NotImplementedError

    def trace(self, *args, **kwargs) -> "Traced":
        raise NotImplementedError

    def lower(self, *args, **kwargs) -> "Lowered":
        raise NotImplementedError


def _nbytes(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


class _Stage:
    """What every stage knows: the traced program (`entry`: jaxpr with the closed-over
    constants as leading inputs, the constants, the output tree, donation) and the call's
    argument structure."""

    def __init__(self, entry, in_tree, in_avals, donated, backend: str, name: str):
        self._entry, self._backend, self._name = entry, backend, name
        self.in_tree, self._in_avals, self._donated = in_tree, list(in_avals), list(donated)

    @property
    def out_tree(self):
        return self._entry.out_tree

    @property
    def in_avals(self):
        return tree_unflatten(self.in_tree, self._in_avals)

    @property
    def out_avals(self):
        return tree_unflatten(self.out_tree, list(self._entry.jaxpr.out_avals))

    @property
    def out_info(self):
        from corejax.api import ShapeDtypeStruct
        return tree_unflatten(self.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                              for a in self._entry.jaxpr.out_avals])

    @property
    def args_info(self):
        return tree_unflatten(self.in_tree, [ArgInfo(a, d) for a, d in
                                             zip(self._in_avals, self._donated)])

    @property
    def donate_argnums(self) -> tuple:
        args_tree = self.in_tree.children()[0]
        donated, i = [], 0
        for pos, child in enumerate(args_tree.children()):
            n = child.num_leaves
            if n and all(self._donated[i:i + n]):
                donated.append(pos)
            i += n
        return tuple(donated)

    @property
    def fun_name(self) -> str:
        return self._name


class Traced(_Stage):
    """`jit(f).trace(*args)`: the Jaxpr of `f` for these argument types."""

    @property
    def jaxpr(self) -> ClosedJaxpr:
        j, n = self._entry.jaxpr.jaxpr, len(self._entry.consts)
        return ClosedJaxpr(core.Jaxpr(j.invars[:n], j.invars[n:], j.eqns, j.outvars),
                           list(self._entry.consts))

    def lower(self, *, lowering_platforms=None, **_) -> "Lowered":
        backend = self._backend
        if lowering_platforms:
            backend = lowering_platforms[0]
        return Lowered(self._entry, self.in_tree, self._in_avals, self._donated, backend,
                       self._name)


class Lowered(_Stage):
    """The program lowered for one backend. `as_text()` shows the compiler's plan."""

    def _executable(self):
        from corejax.compiler import compile_jaxpr
        exe = self._entry.executable
        if exe is None:
            exe = compile_jaxpr(self._entry.jaxpr, self._backend, self._entry.donated,
                                name=self._name)
        return exe

    def as_text(self, dialect: str | None = None, **_) -> str:
        if dialect not in (None, "corejax", "jaxpr"):
            raise ValueError(f"as_text: corejax has no {dialect!r} dialect; its IR is the "
                             "Jaxpr (dialect='jaxpr') and the compiler's plan (default)")
        if dialect == "jaxpr":
            return str(self._entry.jaxpr)
        return self._executable().as_text()

    def compiler_ir(self, dialect: str | None = None):
        return self._entry.jaxpr

    def compile(self, compiler_options: dict | None = None) -> "Compiled":
        if compiler_options:
            raise ValueError(f"corejax's compiler takes no options; got {compiler_options}")
        return Compiled(self._entry, self.in_tree, self._in_avals, self._donated,
                        self._backend, self._name, self._executable())

    def cost_analysis(self) -> dict:
        return cost_analysis(self._entry.jaxpr)


class Compiled(_Stage):
    """A compiled program: call it with arguments of the types it was traced for."""

    def __init__(self, entry, in_tree, in_avals, donated, backend, name, executable):
        super().__init__(entry, in_tree, in_avals, donated, backend, name)
        self._exe = executable

    def __call__(self, *args, **kwargs):
        from corejax.api import _run
        leaves, tree = tree_flatten((tuple(args), kwargs))
        if tree != self.in_tree:
            raise TypeError(
                "Function compiled with input pytree does not match the input pytree it was "
                f"called with: compiled for {self.in_tree}, called with {tree}.")
        bad = []
        for i, (x, a) in enumerate(zip(leaves, self._in_avals)):
            g = get_aval(x)
            if g.shape != a.shape or g.dtype != a.dtype:
                bad.append(f"argument {i} compiled with {a.str_short()} and called with "
                           f"{g.str_short()}")
        if bad:
            raise TypeError("Argument types differ from the types for which this computation "
                            "was compiled. The mismatches are:\n" + "\n".join(bad))
        return _run(self._entry, self._exe, self._backend, [*self._entry.consts, *leaves])

    call = __call__

    def as_text(self) -> str:
        return self._exe.as_text()

    def cost_analysis(self) -> dict:
        return cost_analysis(self._entry.jaxpr)

    def memory_analysis(self) -> CompiledMemoryStats:
        j = self._entry.jaxpr.jaxpr
        outs = set(v for v in j.outvars if type(v) is core.Var)
        temps = sum(_nbytes(v.aval) for e in j.eqns for v in e.outvars if v not in outs)
        donated = self._entry.donated or ()
        return CompiledMemoryStats(
            generated_code_size_in_bytes=0,
            argument_size_in_bytes=sum(_nbytes(v.aval) for v in j.invars),
            output_size_in_bytes=sum(_nbytes(v.aval) for v in j.outvars),
            alias_size_in_bytes=sum(_nbytes(v.aval) for v, d in zip(j.invars, donated) if d),
            temp_size_in_bytes=temps)

    def runtime_executable(self):
        return self._exe

    @property
    def input_shardings(self):
        return None

    @property
    def output_shardings(self):
        return None


_FREE = {"convert_element_type", "broadcast_in_dim", "reshape", "squeeze", "expand_dims",
         "transpose", "slice", "dynamic_slice", "concatenate", "pad", "rev", "iota", "copy",
         "select_n", "gather", "dynamic_update_slice", "name", "stop_gradient"}


def _size(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64))


def _eqn_flops(eqn) -> float:
    name = eqn.primitive.name
    if name == "dot_general":
        (lc, _), (lb, _) = eqn.params["dimension_numbers"]
        lhs = eqn.invars[0].aval
        contracted = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
        return 2.0 * _size(eqn.outvars[0].aval) * contracted
    if name == "conv_general_dilated":
        rhs = eqn.invars[1].aval
        per_out = _size(rhs) // rhs.shape[eqn.params["dimension_numbers"].rhs_spec[0]]
        return 2.0 * _size(eqn.outvars[0].aval) * per_out
    if name.startswith("reduce_") or name.startswith("arg") or name.startswith("cum"):
        return float(_size(eqn.invars[0].aval))
    sub = [p for p in eqn.params.values() if isinstance(p, ClosedJaxpr)]
    if sub:
        trips = eqn.params.get("length", 1)
        return trips * sum(_jaxpr_flops(s.jaxpr) for s in sub)
    if name in _FREE:
        return 0.0
    return float(sum(_size(v.aval) for v in eqn.outvars))


def _jaxpr_flops(jaxpr) -> float:
    return sum(_eqn_flops(e) for e in jaxpr.eqns)


def cost_analysis(closed: ClosedJaxpr) -> dict:
    """Estimated cost of a program: `flops` (an elementwise op counts one per output element,
    a dot 2*M*N*K, a reduction one per input element, layout ops none; loops count their
    trip count where static) and `bytes accessed` (arguments and outputs)."""
    j = closed.jaxpr
    return {"flops": _jaxpr_flops(j),
            "bytes accessed": float(sum(_nbytes(v.aval) for v in j.invars)
                                    + sum(_nbytes(v.aval) for v in j.outvars))}

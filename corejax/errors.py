"""Exception types users see, named as in JAX so `except` clauses port unchanged."""
from __future__ import annotations

__all__ = [
    "ConcretizationTypeError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "TracerArrayConversionError", "UnexpectedTracerError", "NonConcreteShapeError",
    "FloatingPointError", "NonConcreteBooleanIndexError", "JaxRuntimeError",
]

_FIXES = (
    "If the value depends only on Python values or shapes, mark that argument static "
    "(jit(f, static_argnums=...) or static_argnames=...). To branch or loop on a traced value "
    "inside the compiled program, use lax.cond / lax.switch / jnp.where, or lax.fori_loop / "
    "lax.while_loop / lax.scan.")


def _describe(tracer) -> str:
    origin = tracer._origin() if hasattr(tracer, "_origin") else ""
    return f"{tracer!r}" + (f"\n{origin}" if origin else "")


class ConcretizationTypeError(TypeError):
    """A concrete Python value was needed from an abstract (traced) array."""

    def __init__(self, tracer, context: str = ""):
        self.tracer = tracer
        what = context or "A concrete value was required"
        super().__init__(
            f"Abstract tracer value encountered where a concrete value is expected: "
            f"{_describe(tracer)}\n{what}. {_FIXES}")


class TracerBoolConversionError(ConcretizationTypeError):
    def __init__(self, tracer):
        self.tracer = tracer
        aval = getattr(tracer, "aval", None)
        shape = aval.str_short() if hasattr(aval, "str_short") else "?"
        TypeError.__init__(
            self, f"Attempted boolean conversion of traced array with shape {shape}.\n"
            f"{_describe(tracer)}\nPython `if`, `while`, `and`/`or`/`not` or `bool()` was "
            f"applied to a traced array. {_FIXES}")


class TracerIntegerConversionError(ConcretizationTypeError):
    def __init__(self, tracer):
        super().__init__(tracer, "`int()`, `range()` or indexing with `__index__` was applied "
                                 "to a traced array")


class TracerArrayConversionError(TypeError):
    def __init__(self, tracer):
        self.tracer = tracer
        super().__init__(
            f"The numpy.ndarray conversion method __array__() was called on {_describe(tracer)}. "
            "A traced array has no concrete value: use corejax.numpy instead of numpy inside "
            "transformed functions, or move the numpy call outside.")


class UnexpectedTracerError(Exception):
    def __init__(self, msg: str):
        super().__init__(
            msg + " A traced value escaped the transformation that created it (for example by "
                  "being stored in a global or an attribute during tracing). Return it from the "
                  "function instead.")


class NonConcreteShapeError(ConcretizationTypeError):
    pass


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask index whose value is unknown while tracing (its True count would decide
    the output shape)."""

    def __init__(self, aval):
        super().__init__(
            f"Array boolean indices must be concrete; got {aval.str_short()}. The number of True "
            f"entries of a traced mask is unknown, so the result's shape would be too. Use "
            f"jnp.where(mask, x, fill) to keep the shape, reduce with a masked operation such as "
            f"jnp.sum(jnp.where(mask, x, 0)), or pass a static size: "
            f"x[jnp.nonzero(mask, size=N)].")


class JAXTypeError(TypeError):
    """Base of corejax's own TypeErrors that JAX also raises under this name."""


class KeyReuseError(JAXTypeError):
    """A typed PRNG key was consumed twice while `debug_key_reuse` is on (corejax/random/
    _key_reuse.py)."""

    def __init__(self, msg: str):
        super().__init__(
            msg + "\nEach key may feed one random function (a sampler, split or random_bits): "
                  "split it into as many keys as uses, or pass random.clone(key) where reusing "
                  "it is intended.")


FloatingPointError = FloatingPointError


class JaxRuntimeError(RuntimeError):
    """An error of the runtime rather than of the program's types: a transfer a transfer
    guard disallows (JAX's name, a RuntimeError as there)."""

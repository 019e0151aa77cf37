"""Seeded random composition programs, run identically under real JAX and under corejax.

`program_source(seed)` builds, deterministically from `random.Random(seed)`, the Python source
text of one program:

    def build(jax, jnp, lax):
        def ravel_tree(t): ...            # a pytree -> one 1-D array (leaves in tree order)
        def f0(a0, a1):                   # the base function: idioms of real code
            return jnp.where(a0 > 0.1, a0 * a1, jnp.sin(a1))
        def s1(a0, a1):                   # grad needs a scalar: wrapped with a reduction
            return jnp.sum(jnp.tanh(f0(a0, a1)))
        f1 = jax.grad(s1, argnums=1)
        f2 = jax.vmap(f1, in_axes=(0, None), out_axes=0)
        f3 = jax.jit(f2)
        args = (jnp.array([...], dtype=jnp.float32), jnp.array(...))
        return f3, args

The base function is drawn from a library of idioms (powers with float / int / half
exponents, where, maximum at ties, logsumexp and softmax cross-entropy, sqrt-of-sum norms,
indexing and `.at[]` updates, dot / einsum, reductions with `where=` / keepdims, sort, cumsum,
clip, tanh / exp / log, sin / cos, mean / var, traced exponents, abs / sign / round at ties,
concatenate / stack / reshape / dynamic_slice, gelu / softplus / stop_gradient, argsort /
argmax-driven indexing). On top of it sits a stack, 2 to 4 deep, of transformations: jit,
grad, value_and_grad, grad(has_aux=True), vmap (random in_axes / out_axes), jvp, vjp,
linearize, jacfwd, jacrev, hessian, custom_jvp / custom_vjp wrappers, a grad whose function
closes over the outer arguments, and lax.cond / lax.switch / lax.scan / lax.fori_loop /
lax.while_loop / lax.map bodies; at most third derivatives (MAX_ORDER). A () argument is
sometimes passed as a Python float (weak-typed), as in `grad(f)(2.)`. Every level keeps the program well typed: the generator
tracks each level's argument shapes and output shape, wraps a function with a reduction before
grad / value_and_grad / hessian, adds the batch axis vmap needs to the inputs, and reduces the
tuples of jvp / vjp / multi-argnums derivatives to one array with `ravel_tree`. Only the top
level may return a pytree; `flatten_outputs` turns it into a list of NumPy arrays.

The inputs are small float32 arrays drawn with NumPy from the seed and written into the text as
literals, so the text alone reproduces the program: exec it, call
`build(jax, jnp, lax)`, call `f(*args)`.

This module imports only the standard library and NumPy (it is imported by the generator under
real JAX and by the test under corejax).
"""
from __future__ import annotations

import hashlib
import random
import re

import numpy as np

GENERATOR_VERSION = 3

MAX_OUT = 144       # elements of any level's output
MAX_IN = 36         # elements of any one argument
TIE_GRID = (-1.0, -0.5, 0.0, 0.5, 1.0, 2.0)

_FORWARD = ("jvp", "jacfwd", "hessian", "linearize")
# differentiation order each transformation adds; a program stays at MAX_ORDER or below (a 4th
# derivative through jit is ~20 s of cold kernel compilation in corejax, and rare in real code)
_ORDER = {"grad": 1, "value_and_grad": 1, "jvp": 1, "vjp": 1, "jacfwd": 1, "jacrev": 1,
          "hessian": 2, "grad_closure": 1, "linearize": 1, "grad_aux": 1}
MAX_ORDER = 3


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _fmt_shape(shape) -> str:
    return "(" + "".join(f"{d}, " for d in shape).rstrip(" ") + ")" if len(shape) != 1 \
        else f"({shape[0]},)"


# --------------------------------------------------------------------------- base idioms
# Each idiom takes the Random and returns (params, body, out_shape) with params a list of
# (shape, kind) where kind is 'normal', 'positive' or 'ties' (values on a small grid with exact
# zeros and repeats), and body the expression (in a0, a1, ...) the base function returns.

def _pick(r, xs):
    return xs[r.randrange(len(xs))]


def _suffix_shape(r, shape):
    """A shape broadcastable against `shape`: itself, a suffix of it, or ()."""
    options = [tuple(shape[i:]) for i in range(len(shape) + 1)]
    return _pick(r, options)


def _idiom_pow_float(r):
    s = _pick(r, [(), (3,), (2, 3)])
    body = _pick(r, ["a0 ** 2.", "jnp.sum(a0 ** 2.)", "a0 ** 3. - a0", "1. / (1. + a0 ** 2.)"])
    out = () if body.startswith("jnp.sum") else s
    return [(s, "normal")], body, out


def _idiom_pow_int(r):
    s = _pick(r, [(), (3,), (2, 3)])
    body = _pick(r, ["a0 ** 2", "a0 ** 3", "jnp.sum(a0 ** 2)", "a0 ** 2 * jnp.sin(a0)"])
    out = () if body.startswith("jnp.sum") else s
    return [(s, "normal")], body, out


def _idiom_pow_half(r):
    s = _pick(r, [(), (3,), (2, 3)])
    body = _pick(r, ["a0 ** 0.5", "jnp.sum(a0 ** 0.5)", "a0 ** 0.5 * a0", "jnp.sqrt(a0) + a0 ** 1.5"])
    out = () if body.startswith("jnp.sum") else s
    return [(s, "positive")], body, out


def _idiom_where(r):
    s = _pick(r, [(), (3,), (2, 3)])
    v = r.randrange(4)
    if v == 0:
        t = _suffix_shape(r, s)
        return [(s, "normal"), (t, "normal")], "jnp.where(a0 > 0.1, a0 * a1, jnp.sin(a1))", s
    if v == 1:
        return [(s, "ties")], "jnp.where(a0 > 0., a0, 0.01 * a0)", s
    if v == 2:
        return [(s, "ties")], "jnp.where(a0 > 0., jnp.sqrt(jnp.abs(a0) + 1.), a0 ** 2)", s
    return [(s, "normal")], "jnp.sum(jnp.where(a0 < 0.3, jnp.exp(a0), 2. * a0))", ()


def _idiom_maximum(r):
    s = _pick(r, [(), (3,), (2, 3)])
    v = r.randrange(6 if s else 4)
    if v == 0:
        return [(s, "ties")], "jnp.maximum(a0, 0.)", s
    if v == 1:
        t = _suffix_shape(r, s)
        return [(s, "ties"), (t, "ties")], "jnp.maximum(a0, a1)", s
    if v == 2:
        return [(s, "ties")], "jnp.minimum(a0, 0.5) * a0", s
    if v == 3:
        return [(s, "ties")], "jax.nn.relu(a0) + jnp.maximum(a0, 0.)", s
    if v == 4:
        return [(s, "ties")], "jnp.max(a0, axis=-1)", s[:-1]
    return [(s, "ties")], "jnp.min(a0 * 2., axis=0, keepdims=True)", (1,) + s[1:]


def _idiom_logsumexp(r):
    s = _pick(r, [(3,), (2, 3)])
    v = r.randrange(3)
    if v == 0:
        return [(s, "normal")], "jax.nn.logsumexp(a0, axis=-1)", s[:-1]
    if v == 1:
        return [(s, "normal")], "jax.scipy.special.logsumexp(a0)", ()
    return [(s, "normal")], "jax.scipy.special.logsumexp(a0, axis=0, keepdims=True)", \
        (1,) + s[1:]


def _idiom_xent(r):
    s = _pick(r, [(3,), (2, 3)])
    labels = [r.randrange(3) for _ in range(_size(s[:-1]))]
    lab = f"jnp.array({labels[0]})" if len(s) == 1 else f"jnp.array({labels})"
    v = r.randrange(3)
    if v == 0:
        body = f"-jnp.sum(jax.nn.one_hot({lab}, 3) * jax.nn.log_softmax(a0, axis=-1), axis=-1)"
        return [(s, "normal")], body, s[:-1]
    if v == 1:
        body = (f"jnp.mean(-jnp.sum(jax.nn.one_hot({lab}, 3) * "
                f"jax.nn.log_softmax(a0 * a1), axis=-1))")
        return [(s, "normal"), (_suffix_shape(r, s), "normal")], body, ()
    return [(s, "normal")], "jax.nn.softmax(a0, axis=-1)", s


def _idiom_norm(r):
    s = _pick(r, [(3,), (2, 3)])
    v = r.randrange(3)
    if v == 0:
        return [(s, "normal")], "jnp.sqrt(jnp.sum(a0 ** 2))", ()
    if v == 1:
        return [(s, "normal")], "jnp.sqrt(jnp.sum(a0 * a0, axis=-1, keepdims=True))", \
            s[:-1] + (1,)
    return [(s, "normal")], "a0 / jnp.sqrt(jnp.sum(a0 ** 2.) + 1e-6)", s


def _idiom_index(r):
    if r.random() < 0.5:
        v = r.randrange(7)
        s = (3,)
        if v == 0:
            return [(s, "normal")], "a0[1] * a0[-1]", ()
        if v == 1:
            return [(s, "normal")], "a0[::2]", (2,)
        if v == 2:
            return [(s, "normal")], "a0[jnp.array([2, 0, 2])] * a0", (3,)
        if v == 3:
            return [(s, "normal"), ((), "normal")], "a0.at[1].set(a1 * a0[0])", (3,)
        if v == 4:
            return [(s, "normal"), ((), "normal")], "a0.at[0].add(a1) * a0", (3,)
        if v == 5:
            return [(s, "normal"), ((), "normal")], "a0.at[2].mul(a1)", (3,)
        return [(s, "normal")], "a0.at[1:].set(jnp.sin(a0[:2]))", (3,)
    s = (2, 3)
    v = r.randrange(7)
    if v == 0:
        return [(s, "normal")], "a0[0] * a0[1, ::-1]", (3,)
    if v == 1:
        return [(s, "normal")], "a0[:, 1]", (2,)
    if v == 2:
        return [(s, "normal"), ((3,), "normal")], "a0.at[0].set(a1)", s
    if v == 3:
        return [(s, "normal"), ((2,), "normal")], "a0.at[:, 1].add(a1 * a0[:, 0])", s
    if v == 4:
        return [(s, "normal"), ((), "normal")], "a0.at[1, 2].mul(a1)", s
    if v == 5:
        return [(s, "normal")], "a0[..., jnp.array([0, 2])]", (2, 2)
    return [(s, "normal"), ((3,), "normal")], "a0.at[jnp.array([1, 0, 1])].add(a1[None] * a0[0])", s


def _idiom_dot(r):
    v = r.randrange(7)
    if v == 0:
        return [((3,), "normal"), ((3,), "normal")], "jnp.dot(a0, a1)", ()
    if v == 1:
        return [((2, 3), "normal"), ((3,), "normal")], "a0 @ a1", (2,)
    if v == 2:
        return [((2, 3), "normal"), ((3,), "normal")], "jnp.einsum('ij,j->i', a0, a1)", (2,)
    if v == 3:
        return [((2, 3), "normal"), ((2, 3), "normal")], "jnp.einsum('ij,ij->', a0, a1)", ()
    if v == 4:
        return [((2, 3), "normal"), ((2, 3), "normal")], "a0 @ a1.T", (2, 2)
    if v == 5:
        return [((3,), "normal"), ((3,), "normal")], "jnp.outer(a0, a1)", (3, 3)
    return [((2, 3), "normal"), ((2,), "normal")], "jnp.dot(a1, jnp.tanh(a0))", (3,)


def _idiom_reduce(r):
    s = _pick(r, [(3,), (2, 3)])
    v = r.randrange(7)
    if v == 0:
        return [(s, "normal")], "jnp.sum(a0, axis=-1, keepdims=True) * a0", s
    if v == 1:
        return [(s, "normal"), (s, "normal")], "jnp.sum(a0 * a1, where=a0 > 0.)", ()
    if v == 2:
        mask = [[True, False, r.random() < 0.5]] * (1 if len(s) == 1 else 2)
        mask = mask[0] if len(s) == 1 else mask
        return [(s, "normal")], f"jnp.mean(a0, axis=-1, where=jnp.array({mask}))", s[:-1]
    if v == 3:
        return [(s, "ties")], "jnp.max(a0, axis=0, keepdims=True)", (1,) + s[1:]
    if v == 4:
        return [(s, "ties")], "jnp.max(a0, where=a0 < 0.75, initial=-2.)", ()
    if v == 5:
        return [(s, "normal")], "jnp.prod(a0, axis=-1)", s[:-1]
    return [(s, "ties")], "jnp.min(a0, axis=-1) + jnp.sum(a0)", s[:-1]


def _idiom_sort(r):
    s = _pick(r, [(3,), (2, 3)])
    kind = _pick(r, ["normal", "ties"])
    v = r.randrange(3)
    if v == 0:
        return [(s, kind)], "jnp.sort(a0, axis=-1) * jnp.array([1., 2., 3.])", s
    if v == 1:
        return [(s, kind)], "jnp.sort(a0, axis=0) ** 2", s
    return [(s, kind)], "jnp.sort(a0.ravel())[-2:]", (2,)


def _idiom_cumsum(r):
    s = _pick(r, [(3,), (2, 3)])
    v = r.randrange(3)
    if v == 0:
        return [(s, "normal")], "jnp.cumsum(a0, axis=-1)", s
    if v == 1:
        return [(s, "normal")], "jnp.cumsum(a0)", (_size(s),)
    return [(s, "normal")], "jnp.cumsum(a0 * a0, axis=0)", s


def _idiom_clip(r):
    s = _pick(r, [(), (3,), (2, 3)])
    v = r.randrange(2)
    if v == 0:
        return [(s, "ties")], "jnp.clip(a0, -0.5, 0.5)", s
    return [(s, "normal")], "jnp.clip(a0 * 2., -1., 1.) * a0", s


def _idiom_transcendental(r):
    s = _pick(r, [(), (3,), (2, 3)])
    v = r.randrange(5)
    if v == 0:
        return [(s, "normal")], "jnp.tanh(a0) * jnp.exp(-a0 * a0)", s
    if v == 1:
        return [(s, "positive")], "jnp.log(a0) + jnp.exp(a0)", s
    if v == 2:
        return [(s, "normal")], "jnp.log1p(jnp.exp(a0))", s
    if v == 3:
        return [(s, "normal")], "jax.nn.sigmoid(a0) * a0", s
    return [(s, "normal")], "jnp.expm1(a0) - jnp.log(1. + a0 * a0)", s


def _idiom_trig(r):
    s = _pick(r, [(), (3,), (2, 3)])
    if r.random() < 0.5:
        return [(s, "normal"), (_suffix_shape(r, s), "normal")], "jnp.sin(a0) * jnp.cos(a1)", s
    return [(s, "normal")], "jnp.sin(a0) ** 2 + jnp.cos(2. * a0)", s


def _idiom_stats(r):
    s = _pick(r, [(3,), (2, 3)])
    v = r.randrange(4)
    if v == 0:
        return [(s, "normal")], "jnp.mean(a0)", ()
    if v == 1:
        return [(s, "normal")], "jnp.var(a0, axis=-1)", s[:-1]
    if v == 2:
        return [(s, "normal")], "jnp.var(a0) + jnp.mean(a0, axis=0)", s[1:]
    return [(s, "normal")], "(a0 - jnp.mean(a0, axis=-1, keepdims=True)) / jnp.std(a0, axis=-1, keepdims=True)", s


def _idiom_pow_traced(r):
    s = _pick(r, [(), (3,), (2, 3)])
    t = _suffix_shape(r, s)
    body = _pick(r, ["a0 ** a1", "jnp.power(a0, a1) * a1", "jnp.sum(a0 ** (a1 * 0.5))"])
    return [(s, "positive"), (t, "positive")], body, () if body.startswith("jnp.sum") else s


def _idiom_abs_sign(r):
    s = _pick(r, [(), (3,), (2, 3)])
    body = _pick(r, ["jnp.abs(a0) * jnp.sign(a0) + jnp.abs(a0)", "jnp.abs(a0) ** 1.5 + a0",
                     "jnp.logaddexp(a0, jnp.abs(a0))", "jnp.round(a0 * 2.) * a0 + jnp.floor(a0)"])
    return [(s, "ties")], body, s


def _idiom_shape_ops(r):
    v = r.randrange(6)
    if v == 0:
        s = _pick(r, [(3,), (2, 3)])
        return [(s, "normal")], "jnp.concatenate([a0, jnp.sin(a0)], axis=-1)", \
            s[:-1] + (2 * s[-1],)
    if v == 1:
        s = _pick(r, [(), (3,), (2, 3)])
        return [(s, "normal"), (s, "normal")], "jnp.stack([a0, a1 * a0], axis=0)", (2,) + s
    if v == 2:
        return [((2, 3), "normal")], "jnp.transpose(a0).reshape(2, 3) * a0", (2, 3)
    if v == 3:
        return [((2, 3), "normal")], "jnp.expand_dims(a0, 1) * a0[None]", (2, 2, 3)
    if v == 4:
        return [((3,), "normal")], "lax.dynamic_slice(a0, (1,), (2,)) * a0[:2]", (2,)
    return [((2, 3), "normal"), ((2,), "normal")], \
        "lax.dynamic_update_slice(a0, a1[:, None] * a0[:, :1], (0, 1))", (2, 3)


def _idiom_nn(r):
    s = _pick(r, [(), (3,), (2, 3)])
    body = _pick(r, ["jax.nn.gelu(a0)", "jax.nn.softplus(a0) * a0", "jax.nn.gelu(a0, approximate=False)",
                     "lax.stop_gradient(a0) * a0 + a0"])
    return [(s, "normal")], body, s


def _idiom_argsort(r):
    s = _pick(r, [(3,), (2, 3)])
    kind = _pick(r, ["normal", "ties"])
    v = r.randrange(3)
    if v == 0:
        return [(s, kind)], "jnp.take_along_axis(a0, jnp.argsort(a0, axis=-1), axis=-1) * a0", s
    if v == 1:
        return [(s, kind)], "a0.ravel()[jnp.argmax(a0)] * a0", s
    return [(s, kind)], "jnp.where(jnp.arange(3) == jnp.argmin(a0, axis=-1, keepdims=True), a0, 0.)", s


IDIOMS = [
    _idiom_pow_float, _idiom_pow_int, _idiom_pow_half, _idiom_where, _idiom_maximum,
    _idiom_logsumexp, _idiom_xent, _idiom_norm, _idiom_index, _idiom_dot, _idiom_reduce,
    _idiom_sort, _idiom_cumsum, _idiom_clip, _idiom_transcendental, _idiom_trig, _idiom_stats,
    _idiom_pow_traced, _idiom_abs_sign, _idiom_shape_ops, _idiom_nn, _idiom_argsort,
]

POST_OPS = ["jnp.tanh({})", "{} * 1.5 + 0.25", "jnp.sin({})"]


# --------------------------------------------------------------------------- transformations

class _Level:
    def __init__(self, name, in_shapes, out_shape, custom_vjp=False):
        self.name = name
        self.in_shapes = [tuple(s) for s in in_shapes]
        self.out_shape = tuple(out_shape)
        self.custom_vjp = custom_vjp   # a custom_vjp below: forward-mode raises in JAX


class _Builder:
    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.lines = []
        self.k = 0

    def emit(self, *lines):
        self.lines.extend(lines)

    def sig(self, lv):
        return ", ".join(f"a{i}" for i in range(len(lv.in_shapes)))

    # a scalar-valued version of lv, for grad / value_and_grad / hessian
    def scalarize(self, lv):
        sig = self.sig(lv)
        if lv.out_shape == () and self.r.random() < 0.5:
            return lv.name
        red = _pick(self.r, ["jnp.sum({})", "jnp.sum(jnp.tanh({}))", "jnp.mean({} ** 2)",
                             "jnp.sum(jnp.sin({}))"])
        name = f"s{self.k}"
        self.emit(f"def {name}({sig}):", f"    return {red.format(f'{lv.name}({sig})')}")
        return name

    def argnums(self, lv, allow_tuple=True):
        n = len(lv.in_shapes)
        if n > 1 and allow_tuple and self.r.random() < 0.3:
            return (0, 1)
        return self.r.randrange(n)

    def ravel(self, expr_fn, lv, name, raw):
        """Emits `name(sig) = ravel_tree(expr)` (or the raw pytree at the top)."""
        sig = self.sig(lv)
        self.emit(f"def {name}({sig}):",
                  f"    return {expr_fn(sig) if raw else 'ravel_tree(' + expr_fn(sig) + ')'}")

    def transform(self, kind, lv, top):
        """Returns the new level, or None if `kind` does not fit `lv`."""
        r = self.r
        self.k += 1
        k = self.k
        name = f"f{k}"
        sig = self.sig(lv)
        n = len(lv.in_shapes)
        raw = top and r.random() < 0.5
        out_size = _size(lv.out_shape)
        if kind == "jit":
            self.emit(f"{name} = jax.jit({lv.name})")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind in ("grad", "value_and_grad"):
            an = self.argnums(lv)
            s = self.scalarize(lv)
            fn = "jax.grad" if kind == "grad" else "jax.value_and_grad"
            if kind == "grad" and isinstance(an, int):
                self.emit(f"{name} = jax.grad({s}, argnums={an})")
                return _Level(name, lv.in_shapes, lv.in_shapes[an], lv.custom_vjp)
            g = f"g{k}"
            self.emit(f"{g} = {fn}({s}, argnums={an})")
            self.ravel(lambda sg: f"{g}({sg})", lv, name, raw)
            ans = an if isinstance(an, tuple) else (an,)
            size = sum(_size(lv.in_shapes[i]) for i in ans) + (kind == "value_and_grad")
            return _Level(name, lv.in_shapes, (size,), lv.custom_vjp)
        if kind == "vmap":
            b = r.choice([2, 3])
            axes, new_in = [], []
            for s in lv.in_shapes:
                if r.random() < 0.3:
                    axes.append(None)
                    new_in.append(s)
                else:
                    ax = r.randrange(-len(s) - 1, len(s) + 1)
                    axes.append(ax)
                    pos = ax % (len(s) + 1)
                    new_in.append(s[:pos] + (b,) + s[pos:])
            if all(a is None for a in axes):
                s = lv.in_shapes[0]
                axes[0] = 0
                new_in[0] = (b,) + s
            if any(_size(s) > MAX_IN for s in new_in) or out_size * b > MAX_OUT:
                return None
            od = len(lv.out_shape)
            oax = r.randrange(-od - 1, od + 1)
            pos = oax % (od + 1)
            out = lv.out_shape[:pos] + (b,) + lv.out_shape[pos:]
            if len(axes) == 1 and r.random() < 0.5:
                ia = repr(axes[0])
            else:
                ia = "(" + ", ".join(repr(a) for a in axes) + ("," if len(axes) == 1 else "") + ")"
            self.emit(f"{name} = jax.vmap({lv.name}, in_axes={ia}, out_axes={oax})")
            return _Level(name, new_in, out, lv.custom_vjp)
        if kind == "jvp":
            if 2 * out_size > MAX_OUT:
                return None
            tans = []
            for i in range(n):
                tans.append(_pick(r, [f"jnp.cos(a{i})", f"jnp.ones_like(a{i})", f"0.5 * a{i}"]))
            tt = "(" + ", ".join(tans) + ("," if n == 1 else "") + ")"
            pp = "(" + sig + ("," if n == 1 else "") + ")"
            mode = _pick(r, ["both", "tangent"]) if not raw else "both"
            if mode == "tangent":
                self.emit(f"def {name}({sig}):",
                          f"    return jax.jvp({lv.name}, {pp}, {tt})[1]")
                return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
            self.ravel(lambda sg: f"jax.jvp({lv.name}, {pp}, {tt})", lv, name, raw)
            return _Level(name, lv.in_shapes, (2 * out_size,), lv.custom_vjp)
        if kind == "vjp":
            ct = _pick(r, ["jnp.ones_like(y)", "jnp.sin(y)", "y"])
            in_total = sum(_size(s) for s in lv.in_shapes)
            if out_size + in_total > MAX_OUT:
                return None
            mode = _pick(r, ["both", "ct0"]) if not raw else "both"
            self.emit(f"def {name}({sig}):",
                      f"    y, pullback = jax.vjp({lv.name}, {sig})",
                      f"    ct = pullback({ct})")
            if mode == "ct0":
                self.emit("    return ct[0]")
                return _Level(name, lv.in_shapes, lv.in_shapes[0], lv.custom_vjp)
            self.emit("    return (y, ct)" if raw else "    return ravel_tree((y, ct))")
            return _Level(name, lv.in_shapes, (out_size + in_total,), lv.custom_vjp)
        if kind in ("jacfwd", "jacrev"):
            an = self.argnums(lv)
            ans = an if isinstance(an, tuple) else (an,)
            size = sum(out_size * _size(lv.in_shapes[i]) for i in ans)
            if size > MAX_OUT:
                return None
            if isinstance(an, int):
                self.emit(f"{name} = jax.{kind}({lv.name}, argnums={an})")
                return _Level(name, lv.in_shapes, lv.out_shape + lv.in_shapes[an],
                              lv.custom_vjp)
            g = f"g{k}"
            self.emit(f"{g} = jax.{kind}({lv.name}, argnums={an})")
            self.ravel(lambda sg: f"{g}({sg})", lv, name, raw)
            return _Level(name, lv.in_shapes, (size,), lv.custom_vjp)
        if kind == "hessian":
            an = self.argnums(lv, allow_tuple=False)
            if _size(lv.in_shapes[an]) ** 2 > MAX_OUT:
                return None
            s = self.scalarize(lv)
            self.emit(f"{name} = jax.hessian({s}, argnums={an})")
            return _Level(name, lv.in_shapes, lv.in_shapes[an] * 2, lv.custom_vjp)
        if kind == "custom_jvp":
            scale = _pick(r, ["", "2.0 * "])
            self.emit(f"{name} = jax.custom_jvp({lv.name})",
                      f"def {name}_jvp(primals, tangents):",
                      f"    y, t = jax.jvp({lv.name}, primals, tangents)",
                      f"    return y, {scale}t",
                      f"{name}.defjvp({name}_jvp)")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind == "custom_vjp":
            scale = _pick(r, ["c", "2.0 * c", "-c"])   # bwd must be linear in ct
            self.emit(f"{name} = jax.custom_vjp({lv.name})",
                      f"def {name}_fwd({sig}):",
                      f"    return {lv.name}({sig}), ({sig}{',' if n == 1 else ''})",
                      f"def {name}_bwd(res, ct):",
                      f"    _, pullback = jax.vjp({lv.name}, *res)",
                      f"    return tuple({scale} for c in pullback(ct))",
                      f"{name}.defvjp({name}_fwd, {name}_bwd)")
            return _Level(name, lv.in_shapes, lv.out_shape, True)
        if kind == "cond":
            other = _pick(r, ["jnp.sin({})", "-{}", "{} * 2. - 1."])
            pred = _pick(r, ["jnp.sum(a0) > 0.", "a0.ravel()[0] < 0.5", f"jnp.mean(a{n - 1}) > -0.2"])
            self.emit(f"def {name}_other({sig}):",
                      f"    return {other.format(f'{lv.name}({sig})')}",
                      f"def {name}({sig}):",
                      f"    return lax.cond({pred}, {lv.name}, {name}_other, {sig})")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind == "switch":
            self.emit(f"def {name}_b1({sig}):",
                      f"    return -{lv.name}({sig})",
                      f"def {name}_b2({sig}):",
                      f"    return jnp.cos({lv.name}({sig}))",
                      f"def {name}({sig}):",
                      f"    i = jnp.sum(a0 > 0.2).astype(jnp.int32)",
                      f"    return lax.switch(i, [{lv.name}, {name}_b1, {name}_b2], {sig})")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind == "scan":
            length = r.choice([2, 3])
            rev = ", reverse=True" if r.random() < 0.3 else ""
            zeros = f"jnp.zeros({_fmt_shape(lv.out_shape)}, jnp.float32)"
            self.emit(f"def {name}({sig}):",
                      f"    def body(carry, x):",
                      f"        args, acc = carry",
                      f"        y = {lv.name}(*args)",
                      f"        return (tuple(a * 0.9 + 0.1 * x for a in args), acc + y), y",
                      f"    xs = jnp.arange({length}, dtype=jnp.float32) / {length}",
                      f"    (args, acc), ys = lax.scan(body, (({sig}{',' if n == 1 else ''}), "
                      f"{zeros}), xs{rev})",
                      f"    return acc + 0.5 * ys[-1]")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind == "fori_loop":
            trips = r.choice([1, 2, 3])
            zeros = f"jnp.zeros({_fmt_shape(lv.out_shape)}, jnp.float32)"
            self.emit(f"def {name}({sig}):",
                      f"    def body(i, carry):",
                      f"        args, acc = carry",
                      f"        return tuple(a * 0.9 + 0.1 for a in args), acc + {lv.name}(*args) * (i + 1)",
                      f"    _, acc = lax.fori_loop(0, {trips}, body, (({sig}{',' if n == 1 else ''}), "
                      f"{zeros}))",
                      f"    return acc")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind == "grad_closure":
            # an inner grad whose function closes over the outer arguments (perturbation
            # confusion if the tags of nested differentiations mix)
            rest = ", ".join(f"a{i}" for i in range(1, n))
            call = f"{lv.name}(b{', ' + rest if rest else ''})"
            self.emit(f"def {name}({sig}):",
                      f"    def inner(b):",
                      f"        return jnp.sum(jnp.sin({call}) * jnp.mean(a0))",
                      f"    return jax.grad(inner)(a0 * 1.5)")
            return _Level(name, lv.in_shapes, lv.in_shapes[0], lv.custom_vjp)
        if kind == "linearize":
            if 2 * out_size > MAX_OUT:
                return None
            tans = ", ".join(_pick(r, [f"jnp.cos(a{i})", f"jnp.ones_like(a{i})"]) for i in range(n))
            self.emit(f"def {name}({sig}):",
                      f"    y, f_jvp = jax.linearize({lv.name}, {sig})",
                      f"    return {'(y, f_jvp(' + tans + '))' if raw else 'ravel_tree((y, f_jvp(' + tans + ')))'}")
            return _Level(name, lv.in_shapes, (2 * out_size,), lv.custom_vjp)
        if kind == "lax_map":
            b = r.choice([2, 3])
            new0 = (b,) + lv.in_shapes[0]
            if _size(new0) > MAX_IN or out_size * b > MAX_OUT:
                return None
            rest = "".join(f", a{i}" for i in range(1, n))
            self.emit(f"def {name}({sig}):",
                      f"    return lax.map(lambda x: {lv.name}(x{rest}), a0)")
            return _Level(name, [new0] + lv.in_shapes[1:], (b,) + lv.out_shape, lv.custom_vjp)
        if kind == "while_loop":
            zeros = f"jnp.zeros({_fmt_shape(lv.out_shape)}, jnp.float32)"
            self.emit(f"def {name}({sig}):",
                      f"    def body(carry):",
                      f"        i, args, acc = carry",
                      f"        return i + 1, tuple(a * 0.9 + 0.1 for a in args), acc + {lv.name}(*args)",
                      f"    _, _, acc = lax.while_loop(lambda c: c[0] < 2, body, "
                      f"(0, ({sig}{',' if n == 1 else ''}), {zeros}))",
                      f"    return acc")
            return _Level(name, lv.in_shapes, lv.out_shape, lv.custom_vjp)
        if kind == "grad_aux":
            an = r.randrange(n)
            self.emit(f"def s{k}({sig}):",
                      f"    y = {lv.name}({sig})",
                      f"    return jnp.sum(jnp.sin(y)), y")
            self.emit(f"g{k} = jax.grad(s{k}, argnums={an}, has_aux=True)")
            self.ravel(lambda sg: f"g{k}({sg})", lv, name, raw)
            return _Level(name, lv.in_shapes, (_size(lv.in_shapes[an]) + out_size,), lv.custom_vjp)
        raise ValueError(kind)


TRANSFORMS = ["jit", "grad", "value_and_grad", "vmap", "jvp", "vjp", "jacfwd", "jacrev",
              "hessian", "custom_jvp", "custom_vjp", "cond", "switch", "scan", "fori_loop",
              "grad_closure", "linearize", "lax_map", "while_loop", "grad_aux"]
WEIGHTS = [6, 6, 2, 6, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1]


def _values(nprng, shape, kind) -> np.ndarray:
    if kind == "positive":
        v = nprng.uniform(0.5, 2.0, size=shape)
    elif kind == "ties":
        v = nprng.choice(np.array(TIE_GRID), size=shape)
    else:
        v = nprng.standard_normal(size=shape)
    # Rounded to 3 decimals in float64: the literal prints short and both frameworks make the
    # same float32 of it (float64 -> float32, once).
    return np.round(np.asarray(v, dtype=np.float64), 3)


# an input array's literal, as _literal writes it
_ARG_LITERAL = re.compile(r"jnp\.array\(([-0-9.e\[\], ]+), dtype=jnp\.float32\)")


def _literal(a: np.ndarray) -> str:
    def rec(x):
        if x.ndim == 0:
            return repr(float(x))
        return "[" + ", ".join(rec(e) for e in x) + "]"
    return f"jnp.array({rec(a)}, dtype=jnp.float32)"


def program_source(seed: int) -> str:
    """The source text of program `seed` (see the module docstring)."""
    b = _Builder(seed)
    r = b.r
    idiom = _pick(r, IDIOMS)
    params, body, out = idiom(r)
    if r.random() < 0.25:
        body = _pick(r, POST_OPS).format(body)
    kinds = [k for _, k in params]
    lv = _Level("f0", [s for s, _ in params], out)
    b.emit(f"def f0({b.sig(lv)}):", f"    return {body}")
    depth = r.randint(2, 4)
    done = order = 0
    while done < depth:
        kind = r.choices(TRANSFORMS, WEIGHTS)[0]
        if lv.custom_vjp and kind in _FORWARD and r.random() < 0.8:
            continue
        if order + _ORDER.get(kind, 0) > MAX_ORDER:
            continue
        saved = (list(b.lines), b.k)
        new = b.transform(kind, lv, top=(done == depth - 1))
        if new is None:
            b.lines, b.k = saved
            continue
        lv = new
        done += 1
        order += _ORDER.get(kind, 0)
    nprng = np.random.default_rng(seed)
    arg_lits = []
    for i, s in enumerate(lv.in_shapes):
        v = _values(nprng, s, kinds[i])
        # a () argument is sometimes a Python float, as in `grad(f)(2.)` (weak-typed)
        arg_lits.append(repr(float(v)) if s == () and r.random() < 0.3 else _literal(v))
    lines = ["def build(jax, jnp, lax):",
             "    def ravel_tree(t):",
             "        return jnp.concatenate([jnp.ravel(l) for l in jax.tree_util.tree_leaves(t)])"]
    lines += ["    " + ln for ln in b.lines]
    lines.append(f"    args = ({', '.join(arg_lits)}{',' if len(arg_lits) == 1 else ''})")
    lines.append(f"    return {lv.name}, args")
    return "\n".join(lines) + "\n"


def source_hash(src: str) -> str:
    return hashlib.sha1(src.encode()).hexdigest()[:16]


def build(seed: int, jax, jnp, lax):
    """Returns (f, args, source) of program `seed` built against the given namespaces."""
    src = program_source(seed)
    ns: dict = {}
    exec(compile(src, f"<fuzz program {seed}>", "exec"), ns)
    f, args = ns["build"](jax, jnp, lax)
    return f, args, src


def _leaves(out) -> list:
    if out is None:
        return []
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    if isinstance(out, dict):
        return [leaf for k in sorted(out) for leaf in _leaves(out[k])]
    return [out]


def flatten_outputs(out) -> list:
    """A pytree of arrays -> a list of NumPy arrays (tuples / lists in order, dicts by sorted key,
    None dropped)."""
    return [np.asarray(leaf) for leaf in _leaves(out)]


def weak_types(out) -> list:
    """Each leaf's weak_type (None for a leaf without one, e.g. a NumPy array)."""
    return [getattr(leaf, "weak_type", None) for leaf in _leaves(out)]


_SKIP_BASES = {"object", "BaseException", "Exception"}


def exception_names(e: BaseException) -> list:
    """The class names of `e`'s type and its bases, most derived first."""
    return [c.__name__ for c in type(e).__mro__ if c.__name__ not in _SKIP_BASES]


def run(seed: int, jax, jnp, lax, x64: bool = False):
    """Runs program `seed`: ('ok', (leaves, weak_types), src) or ('error', exception, src).
    With x64 the program computes in float64 (JAX's float64 reference) from the very float32
    inputs of the float32 run (its literals' float32 values, widened), so that the difference
    of the two runs measures float32 rounding, not the inputs' own rounding."""
    src = program_source(seed)
    text = src
    if x64:
        text = _ARG_LITERAL.sub(r"jnp.array(\1, dtype=__F32__).astype(jnp.float64)", text)
        text = text.replace("jnp.float32", "jnp.float64").replace("__F32__", "jnp.float32")
    try:
        ns: dict = {}
        exec(compile(text, f"<fuzz program {seed}>", "exec"), ns)
        f, args = ns["build"](jax, jnp, lax)
        out = f(*args)
        leaves = flatten_outputs(out)
        weak = weak_types(out)
    except Exception as e:  # noqa: BLE001 - the exception type is the expected result
        return "error", e, src
    return "ok", (leaves, weak), src


if __name__ == "__main__":
    import sys
    for s in sys.argv[1:] or ["0"]:
        print(f"# seed {s}")
        print(program_source(int(s)))

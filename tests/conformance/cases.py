"""The per-function conformance cases, shared by the golden generator (real JAX) and the test
(corejax). Imports only numpy and the standard library.

A case is a dict:
  id          unique "<fn>/<label>"
  fn          the function by its JAX path ("numpy.sin", "lax.add", "nn.relu", "random.normal",
              "scipy.special.logsumexp"), or "array.<name>" for an operator / method wrapper
              defined in ARRAY_OPS below (written with Python operators only, so that the same
              code runs on JAX and corejax arrays)
  args        positional arguments: an array spec string "f32[2,3]" / "i32[4]:idx3" (built by
              `build`), a list of array specs (a list argument), a Python literal, `Ref(path)`
              (a framework function, static) or `Call(path, ...)` (a framework object, static)
  kwargs      keyword arguments; array-spec values are dynamic (traced), all others static
  static      indices of positional Python literals that are static (closed over); by default
              int/float/bool literals are dynamic (weakly typed under jit), others static
  transforms  a subset of TRANSFORMS
  x64         run with jax_enable_x64; partitionable: jax_threefry_partitionable
  ulp         the value tolerance, in units of the dtype's eps (relative to the leaf's scale)
  post        attribute names read off the result (for non-array results such as finfo)

`run(case, transform, fw)` evaluates one (case, transform) on a framework namespace `fw` that has
numpy, lax, nn, random, scipy_special, jit, vmap, grad, jvp, vjp: the very same code drives JAX in
gen_conformance.py and corejax in test_conformance.py.
"""
import glob
import importlib
import operator
import os
import re
import zlib

import ml_dtypes
import numpy as np

TRANSFORMS = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "hvp", "jit_grad")
FULL = TRANSFORMS
NOGRAD = ("eager", "jit", "vmap")
BASIC = ("eager", "jit")
BATCH = 3  # the vmap batch size: distinct from every case dimension (1, 2, 4, 5)

_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
           "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32, "bool": np.bool_,
           "c64": np.complex64, "c128": np.complex128,
           # ml_dtypes' types: "bf16", "f8e4m3fn", "f4e2m1fn", "i4", "u2", ...
           "bf16": ml_dtypes.bfloat16, **{
               n.replace("float", "f").replace("_", ""): getattr(ml_dtypes, n) for n in (
                   "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                   "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
                   "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")},
           **{f"{u[0]}{b}": getattr(ml_dtypes, f"{u}{b}") for u in ("int", "uint")
              for b in (1, 2, 4)}}
_SPEC = re.compile(r"^(key|[a-z][a-z0-9]*)\[([0-9,]*)\](?::(\w+))?$")
_FLOAT_SPECS = ("f16", "f32", "f64", "bf16")  # the kinds grad / jvp / vjp differentiate


def kind_of(dt):
    """NumPy's kind letter, with ml_dtypes' floats as "f" and narrow integers "i" / "u" (NumPy
    says "V" for them)."""
    dt = np.dtype(dt)
    if dt.kind != "V" or dt.type.__module__ != "ml_dtypes":   # float0 stays "V"
        return dt.kind
    return "u" if dt.name.startswith("uint") else "i" if dt.name.startswith("int") else "f"


class Ref:
    """A framework function named by its JAX path, passed as a static argument."""

    def __init__(self, path):
        self.path = path

    def __repr__(self):
        return f"Ref({self.path!r})"


class Call:
    """A framework object built by calling `path(*args, **kwargs)` (static)."""

    def __init__(self, path, *args, **kwargs):
        self.path, self.args, self.kwargs = path, args, kwargs

    def __repr__(self):
        return f"Call({self.path!r})"


def seed_of(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


def is_spec(value):
    return isinstance(value, str) and _SPEC.match(value) is not None


def parse_spec(spec):
    kind, dims, domain = _SPEC.match(spec).groups()
    shape = tuple(int(d) for d in dims.split(",") if d)
    return kind, shape, domain or "real"


def _spec_leaves(value):
    return value if isinstance(value, list) else [value]


def make_array(spec, rng, shape=None):
    """The numpy array for an array spec; `shape` overrides the spec's (vmap batches)."""
    kind, spec_shape, domain = parse_spec(spec)
    shape = spec_shape if shape is None else shape
    if kind == "key":
        # legacy uint32[2] keys, PRNGKey(seed) for seeds below 2**32
        seeds = rng.integers(0, 2**31, size=shape[:-1] if shape else ())
        return np.stack([np.zeros_like(seeds), seeds], axis=-1).astype(np.uint32)
    dt = np.dtype(_DTYPES[kind])
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if kind_of(dt) in "iu":
        if dt.kind == "V":  # int1/2/4, uint1/2/4: the domain's values clipped into range
            info = ml_dtypes.iinfo(dt)
            wide = make_array(spec.replace(kind, kind_of(dt) + "32", 1), rng, shape)
            return np.clip(wide, int(info.min), int(info.max)).astype(dt)
        if domain.startswith("idx"):  # idxN: 0..N-1 ; idxmN: -N..N-1
            n = int(domain[3:].lstrip("m"))
            lo = -n if "m" in domain else 0
            return rng.integers(lo, n, size=shape).astype(dt)
        if domain == "pos":
            return rng.integers(1, 6, size=shape).astype(dt)
        if domain == "shift":
            return rng.integers(0, dt.itemsize * 8, size=shape).astype(dt)
        lo = 0 if dt.kind == "u" else -5
        return rng.integers(lo, 6, size=shape).astype(dt)
    if dt.kind == "c":  # real and imaginary parts drawn from the domain's real spec
        real_spec = spec.replace(kind, "f64", 1)
        return (make_array(real_spec, rng, shape) + 1j * make_array(real_spec, rng, shape)
                ).astype(dt)
    if domain == "real":
        x = rng.standard_normal(shape)
    elif domain == "pos":
        x = rng.uniform(0.5, 2.0, shape)
    elif domain == "unit":
        x = rng.uniform(-0.9, 0.9, shape)
    elif domain == "near1":  # long products stay finite
        x = rng.uniform(0.999, 1.001, shape)
    elif domain == "prob":
        x = rng.uniform(0.1, 0.9, shape)
    elif domain == "gt1":
        x = rng.uniform(1.2, 3.0, shape)
    elif domain == "nz":
        x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], size=shape)
    elif domain == "wide":  # includes values near integers and halves (rounding)
        x = rng.choice([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.2, 0.7, 3.1, -0.0], size=shape)
    elif domain == "special":  # non-finite values and signed zeros
        x = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0], size=shape)
    elif domain == "distinct":  # no ties (sorting, argmax, max gradients)
        x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.5 - 2.0
    else:
        raise ValueError(f"unknown domain {domain!r} in {spec!r}")
    return np.asarray(x).astype(dt)


def case(fn, *args, label=None, kwargs=None, static=(), transforms=NOGRAD, x64=False,
         partitionable=False, ulp=4, post=None):
    return {"fn": fn, "args": list(args), "kwargs": dict(kwargs or {}), "static": tuple(static),
            "transforms": tuple(transforms), "x64": x64, "partitionable": partitionable,
            "ulp": ulp, "post": post, "label": label}


CASES = []
# The public modules whose functions the cases cover, by their path under jax / corejax; a
# cases_<area>.py module next to this file adds its own (see the end of this file).
MODULES = ["numpy", "lax", "nn", "random", "scipy.special"]


def add(*cases):
    for c in cases:
        slots = _slots(c)
        if not any(_min_ndim(spec) is not None for _, spec in slots):
            c["transforms"] = tuple(t for t in c["transforms"] if t != "vmap")
        if not any(_float_spec(spec) for _, spec in slots):
            c["transforms"] = tuple(t for t in c["transforms"] if t in NOGRAD)
        label = c.pop("label") or "_".join(_short(a) for a in c["args"])
        base, n = f"{c['fn']}/{label}", 2
        ids = {x["id"] for x in CASES}
        c["id"] = base
        while c["id"] in ids:
            c["id"], n = f"{base}~{n}", n + 1
        CASES.append(c)


def _short(a):
    if is_spec(a):
        kind, shape, _ = parse_spec(a)
        return kind + "x".join(map(str, shape))
    if isinstance(a, list):
        return "L" + "+".join(_short(x) for x in a)
    if isinstance(a, (Ref, Call)):
        return a.path.split(".")[-1]
    return re.sub(r"[^0-9a-zA-Z.\-]", "", repr(a))[:12] or "lit"


def _pick(name, pool, k):
    """k variants from a pool, chosen by the function's name (deterministic, spread out)."""
    rng = np.random.default_rng(seed_of("pick", name))
    idx = rng.choice(len(pool), size=min(k, len(pool)), replace=False)
    return [pool[i] for i in sorted(idx)]


# ---------------------------------------------------------------- running a case


def resolve(path, fw):
    if path.startswith("array."):
        return ARRAY_OPS[path[6:]]
    mod, _, name = path.rpartition(".")
    return getattr(fw.module(mod), name)


def _static(value, fw):
    if isinstance(value, Ref):
        return resolve(value.path, fw)
    if isinstance(value, Call):
        return resolve(value.path, fw)(*value.args, **value.kwargs)
    return value


def _is_dynamic(value, static):
    if static:
        return False
    if is_spec(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_spec(v) for v in value)
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def _has_spec(value):
    if isinstance(value, (list, tuple)):
        return any(_has_spec(v) for v in value)
    return is_spec(value)


def _slots(c):
    """The dynamic inputs of a case: [(where, spec)], where is an arg index or a kwarg name."""
    out = [(i, a) for i, a in enumerate(c["args"]) if _is_dynamic(a, i in c["static"])]
    out += [(k, v) for k, v in c["kwargs"].items() if is_spec(v)]
    return out


def _build_value(spec, rng, fw, batch_axis=None):
    if is_spec(spec):
        if batch_axis is None:
            return fw.numpy.asarray(make_array(spec, rng))
        kind, shape, _ = parse_spec(spec)
        shape = list(shape)
        shape.insert(batch_axis if batch_axis >= 0 else len(shape) + 1 + batch_axis, BATCH)
        return fw.numpy.asarray(make_array(spec, rng, tuple(shape)))
    if isinstance(spec, (list, tuple)):
        axes = batch_axis if isinstance(batch_axis, (list, tuple)) else [batch_axis] * len(spec)
        return type(spec)(_build_value(s, rng, fw, a) for s, a in zip(spec, axes))
    return spec


def _min_ndim(spec):
    if is_spec(spec):
        return len(parse_spec(spec)[1])
    if isinstance(spec, (list, tuple)):
        dims = [_min_ndim(s) for s in spec if _is_dynamic(s, False) and not isinstance(s, (
            bool, int, float))]
        return min(dims) if dims else None
    return None


def _float_spec(spec):
    if is_spec(spec):
        return parse_spec(spec)[0] in _FLOAT_SPECS
    if isinstance(spec, (list, tuple)):
        specs = [s for s in spec if is_spec(s)]
        return bool(specs) and all(_float_spec(s) for s in specs) and len(specs) == len(spec)
    return False


def in_axes_of(c):
    """The vmap in_axes for each dynamic slot, drawn from the case's seeded rng."""
    rng = np.random.default_rng(seed_of(c["id"], "in_axes"))
    axes = []
    for _, spec in _slots(c):
        nd = _min_ndim(spec)
        if nd is None or (is_spec(spec) and parse_spec(spec)[0] == "key"):
            axes.append(None if nd is None else 0)
            continue
        choices = [None] + list(range(nd + 1)) + [-1]
        ax = choices[rng.integers(len(choices))]
        if isinstance(spec, (list, tuple)) and ax is not None:
            ax = type(spec)(ax if is_spec(s) else None for s in spec)
        axes.append(ax)
    if all(a is None for a in axes):
        for i, (_, spec) in enumerate(_slots(c)):
            if _min_ndim(spec) is not None:
                axes[i] = 0
                break
    return axes


def bind(c, fw):
    """(f, slots): f(*dynamic values) calls the function with the case's static arguments."""
    fn = resolve(c["fn"], fw)
    slots = _slots(c)
    where = [w for w, _ in slots]
    args = [_static(a, fw) for a in c["args"]]
    kwargs = {k: _static(v, fw) for k, v in c["kwargs"].items()}

    def f(*dyn):
        a, kw = list(args), dict(kwargs)
        for w, v in zip(where, dyn):
            if isinstance(w, int):
                a[w] = v
            else:
                kw[w] = v
        out = fn(*a, **kw)
        if c["post"]:
            out = tuple(getattr(out, p) for p in c["post"])
        return out
    return f, slots


def flatten(tree):
    """Leaves and a structure string, for any nest of tuples / lists / dicts."""
    if isinstance(tree, (tuple, list)):
        leaves, parts = [], []
        for t in tree:
            lv, s = flatten(t)
            leaves += lv
            parts.append(s)
        br = "()" if isinstance(tree, tuple) else "[]"
        return leaves, br[0] + ",".join(parts) + br[1]
    if isinstance(tree, dict):
        leaves, parts = [], []
        for k in sorted(tree):
            lv, s = flatten(tree[k])
            leaves += lv
            parts.append(f"{k}:{s}")
        return leaves, "{" + ",".join(parts) + "}"
    if tree is None:
        return [], "None"
    return [tree], "*"


def _weights(shape, dtype):
    rng = np.random.default_rng(seed_of("weights", shape))
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def _is_float_leaf(x):
    dt = getattr(x, "dtype", None)
    return dt is not None and kind_of(dt) == "f"


def _scalarize(out, fw):
    """A weighted sum of the float leaves (weights seeded by shape: no cancellation)."""
    total = 0.0
    for leaf in flatten(out)[0]:
        if _is_float_leaf(leaf):
            total = total + fw.numpy.sum(leaf * _weights(tuple(leaf.shape), leaf.dtype))
    return total


class Framework:
    """The names `run` uses, from a JAX-like top module (jax itself, or corejax): its
    transformations, and its submodules by their path under the top ("numpy.linalg")."""

    def __init__(self, top):
        self.top = top
        self.numpy = self.module("numpy")
        self.jit, self.vmap, self.grad, self.jvp, self.vjp = (
            top.jit, top.vmap, top.grad, top.jvp, top.vjp)

    def module(self, path):
        return importlib.import_module(f"{self.top.__name__}.{path}")


def run(c, transform, fw):
    f, slots = bind(c, fw)
    rng = np.random.default_rng(seed_of(c["id"], "inputs"))
    if transform == "vmap":
        axes = in_axes_of(c)
        dyn = [_build_value(spec, rng, fw, ax) for (_, spec), ax in zip(slots, axes)]
        return fw.vmap(f, in_axes=tuple(axes))(*dyn)
    dyn = [_build_value(spec, rng, fw) for _, spec in slots]
    if transform == "eager":
        return f(*dyn)
    if transform == "jit":
        return fw.jit(f)(*dyn)
    diff = [i for i, (_, spec) in enumerate(slots) if _float_spec(spec)]
    if not diff:
        raise ValueError(f"{c['id']}: no float inputs to differentiate")
    primals = [dyn[i] for i in diff]

    def h(*fargs):
        full = list(dyn)
        for i, v in zip(diff, fargs):
            full[i] = v
        return f(*full)

    def g(*fargs):
        return _scalarize(h(*fargs), fw)

    trng = np.random.default_rng(seed_of(c["id"], "tangents"))
    tangents = [_tangent(p, trng, fw) for p in primals]
    argnums = tuple(range(len(primals)))
    if transform == "grad":
        return fw.grad(g, argnums=argnums)(*primals)
    if transform == "jit_grad":
        return fw.jit(fw.grad(g, argnums=argnums))(*primals)
    if transform == "jvp":
        return fw.jvp(h, tuple(primals), tuple(tangents))
    if transform == "vjp":
        out, pullback = fw.vjp(h, *primals)
        leaves, _ = flatten(out)
        crng = np.random.default_rng(seed_of(c["id"], "cotangent"))
        ct = _rebuild(out, [fw.numpy.asarray(crng.standard_normal(tuple(x.shape)).astype(
            x.dtype)) for x in leaves])
        return out, pullback(ct)
    if transform == "hvp":
        return fw.jvp(fw.grad(g, argnums=argnums), tuple(primals), tuple(tangents))
    raise ValueError(transform)


def _tangent(p, rng, fw):
    if isinstance(p, (list, tuple)):
        return type(p)(_tangent(x, rng, fw) for x in p)
    return fw.numpy.asarray(rng.standard_normal(tuple(p.shape)).astype(p.dtype))


def _rebuild(tree, leaves):
    it = iter(leaves)

    def go(t):
        if isinstance(t, (tuple, list)):
            return type(t)(go(x) for x in t)
        if isinstance(t, dict):
            return {k: go(t[k]) for k in t}
        if t is None:
            return None
        return next(it)
    return go(tree)


def entries():
    """Every (case, transform) pair, in a stable order."""
    return [(c, t) for c in CASES for t in c["transforms"]]


def describe_leaf(leaf):
    """(kind, payload) for a result leaf: arrays by dtype/shape/weak type, others by value."""
    if hasattr(leaf, "dtype") and hasattr(leaf, "shape") and not isinstance(leaf, type):
        return "array", (np.dtype(leaf.dtype).name, tuple(int(d) for d in leaf.shape),
                         bool(getattr(leaf, "weak_type", False)))
    if isinstance(leaf, (type, np.dtype)):
        return "dtype", np.dtype(leaf).name
    if isinstance(leaf, (bool, int, float, str, np.generic)):
        return "py", (type(leaf).__name__ if not isinstance(leaf, np.generic) else
                      "np." + type(leaf).__name__, leaf.item() if isinstance(leaf, np.generic)
                      else leaf)
    return "other", type(leaf).__name__


# ---------------------------------------------------------------- families


def unary(fn, domain="real", ulp=4, diff=True, ints=True, variants=3, extra=()):
    d = f":{domain}" if domain != "real" else ""
    main = case(fn, f"f32[2,3]{d}", transforms=FULL if diff else NOGRAD, ulp=ulp)
    pool = [case(fn, f"f32[]{d}", transforms=("eager", "jit", "grad") if diff else BASIC,
                 ulp=ulp),
            case(fn, f"f16[4]{d}", ulp=ulp),
            case(fn, f"f32[0]{d}", transforms=("eager", "jit", "vmap"), ulp=ulp),
            case(fn, f"f64[5]{d}", x64=True, transforms=("eager", "grad") if diff else BASIC,
                 ulp=ulp),
            case(fn, 0.75 if domain in ("unit", "prob") else 1.5, ulp=ulp)]
    if ints:
        pool.append(case(fn, "i32[4]:pos" if domain in ("pos", "gt1", "nz") else "i32[4]",
                         ulp=ulp))
    add(main, *_pick(fn, pool, variants), *extra)


def binary(fn, dom=("real", "real"), ulp=4, diff=True, ints=True, floats=True, bools=False,
           variants=3, extra=()):
    a, b = (f":{x}" if x != "real" else "" for x in dom)
    pool = []
    if floats:
        add(case(fn, f"f32[2,3]{a}", f"f32[3]{b}", transforms=FULL if diff else NOGRAD,
                 ulp=ulp))
        pool += [case(fn, f"f32[2,1]{a}", f"f32[1,3]{b}", ulp=ulp,
                      transforms=("eager", "jit", "vmap", "grad") if diff else NOGRAD),
                 case(fn, f"f32[3]{a}", 1.5 if dom[1] != "shift" else 2, ulp=ulp),
                 case(fn, 0.5 if dom[0] not in ("pos", "gt1") else 1.5, f"f32[]{b}", ulp=ulp),
                 case(fn, f"f16[4]{a}", f"f16[4]{b}", ulp=ulp),
                 case(fn, f"f64[3]{a}", f"f64[3]{b}", x64=True, ulp=ulp,
                      transforms=("eager", "jit", "grad") if diff else BASIC),
                 case(fn, f"f32[0]{a}", f"f32[1]{b}", ulp=ulp),
                 case(fn, f"i32[3]{a}", f"f32[3]{b}", ulp=ulp)]
    if ints:
        ia, ib = (":pos" if x in ("pos", "nz", "gt1") else (":" + x if x == "shift" else "")
                  for x in dom)
        label = None
        if not floats:
            add(case(fn, f"i32[2,3]{ia}", f"i32[3]{ib}"))
            pool += [case(fn, f"u8[4]{ia}", f"u8[4]{ib}"),
                     case(fn, f"i32[3]{ia}", 2, label=label), case(fn, f"i8[2,1]{ia}", f"i8[3]{ib}")]
        else:
            pool += [case(fn, f"i32[2,3]{ia}", f"i32[3]{ib}"), case(fn, 3, f"i32[3]{ib}")]
    if bools:
        pool.append(case(fn, "bool[4]", "bool[4]"))
    add(*_pick(fn, pool, variants), *extra)


def reduction(fn, diff=True, where=True, initial=False, ints=True, bools=False, ulp=16,
              domain="real", variants=3, extra=()):
    d = f":{domain}" if domain != "real" else ""
    add(case(fn, f"f32[3,4]{d}", transforms=FULL if diff else NOGRAD, ulp=ulp),
        case(fn, f"f32[3,4]{d}", kwargs={"axis": 1, "keepdims": True}, ulp=ulp,
             transforms=FULL if diff else NOGRAD, label="axis1_keepdims"))
    pool = [case(fn, f"f32[2,3,4]{d}", kwargs={"axis": (0, 2)}, ulp=ulp, label="axis02",
                 transforms=("eager", "jit", "vmap", "grad") if diff else NOGRAD),
            case(fn, f"f32[4]{d}", kwargs={"axis": -1}, ulp=ulp, label="axism1"),
            case(fn, f"f16[5]{d}", ulp=ulp),
            case(fn, f"f64[2,3]{d}", kwargs={"axis": 0}, x64=True, ulp=ulp, label="x64_axis0",
                 transforms=("eager", "grad") if diff else BASIC),
            case(fn, f"f32[3,4]{d}", kwargs={"axis": 2}, label="bad_axis", transforms=("eager",))]
    if ints:
        pool.append(case(fn, "i32[3,4]", kwargs={"axis": 0}, label="i32_axis0"))
    if bools:
        pool.append(case(fn, "bool[3,4]", kwargs={"axis": 1}, label="bool_axis1"))
    add(*_pick(fn, pool, variants), *extra)
    if where:
        kw = {"axis": 1, "where": "bool[3,4]"}
        if initial:
            kw["initial"] = -5.0 if "max" in fn else 5.0
        add(case(fn, f"f32[3,4]{d}", kwargs=kw, ulp=ulp, label="where",
                 transforms=FULL if diff else NOGRAD))


# ---------------------------------------------------------------- the cases: jax.numpy

for _fn, _dom, _ulp in [
        ("exp", "real", 8), ("exp2", "real", 8), ("expm1", "real", 8), ("log", "pos", 8),
        ("log1p", "pos", 8), ("sin", "real", 8), ("cos", "real", 8), ("tan", "unit", 8),
        ("arcsin", "unit", 8), ("arccos", "unit", 8), ("arctan", "real", 8),
        ("sinh", "real", 8), ("cosh", "real", 8), ("tanh", "real", 8),
        ("arcsinh", "real", 8), ("arccosh", "gt1", 8), ("arctanh", "unit", 8),
        ("sqrt", "pos", 4), ("cbrt", "pos", 8), ("square", "real", 2),
        ("reciprocal", "nz", 2), ("negative", "real", 1), ("positive", "real", 1),
        ("absolute", "nz", 1), ("abs", "nz", 1), ("deg2rad", "real", 2),
        ("rad2deg", "real", 2), ("radians", "real", 2), ("degrees", "real", 2),
        ("sinc", "nz", 16), ("conjugate", "real", 1), ("conj", "real", 1), ("real", "real", 1)]:
    unary("numpy." + _fn, _dom, ulp=_ulp, ints=_fn not in ("reciprocal",))
unary("numpy.reciprocal", "nz", ulp=2, diff=False, ints=True, variants=0,
      extra=[case("numpy.reciprocal", "i32[4]:pos", label="int")])
for _fn in ("sign", "floor", "ceil", "trunc", "rint", "round", "around"):
    unary("numpy." + _fn, "wide", ulp=1, diff=_fn not in ("sign",), variants=2)
add(case("numpy.round", "f32[2,3]", kwargs={"decimals": 2}, ulp=4, label="decimals2"),
    case("numpy.round", "i32[4]", kwargs={"decimals": -1}, label="int_decimalsm1"))
for _fn in ("isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit"):
    unary("numpy." + _fn, "special", diff=False, variants=2)
unary("numpy.nan_to_num", "special", diff=True, ints=False, variants=2,
      extra=[case("numpy.nan_to_num", "f32[5]:special", kwargs={"nan": 1.0, "posinf": 9.0},
                  label="kw")])
for _fn in ("bitwise_not", "invert"):
    add(case("numpy." + _fn, "i32[2,3]"), case("numpy." + _fn, "bool[4]"),
        case("numpy." + _fn, "u8[3]", transforms=BASIC), case("numpy." + _fn, "f32[3]",
                                                             transforms=("eager",)))
add(case("numpy.logical_not", "bool[2,3]"), case("numpy.logical_not", "f32[4]"))

for _fn, _dom, _ulp, _diff in [
        ("add", ("real", "real"), 1, True), ("subtract", ("real", "real"), 1, True),
        ("multiply", ("real", "real"), 1, True), ("divide", ("real", "nz"), 2, True),
        ("true_divide", ("real", "nz"), 2, True), ("maximum", ("distinct", "real"), 1, True),
        ("minimum", ("distinct", "real"), 1, True), ("power", ("pos", "real"), 16, True),
        ("pow", ("pos", "real"), 16, True), ("arctan2", ("real", "nz"), 8, True),
        ("logaddexp", ("real", "real"), 8, True), ("copysign", ("nz", "nz"), 1, True),
        ("float_power", ("pos", "real"), 16, True), ("nextafter", ("real", "real"), 0, False),
        ("heaviside", ("real", "real"), 1, False),
        ("floor_divide", ("real", "nz"), 2, False), ("remainder", ("real", "nz"), 4, False),
        ("mod", ("real", "nz"), 4, False), ("fmod", ("real", "nz"), 4, False),
        ("divmod", ("real", "nz"), 4, False)]:
    binary("numpy." + _fn, _dom, ulp=_ulp, diff=_diff,
           ints=_fn not in ("nextafter", "logaddexp", "arctan2", "copysign", "power", "pow"),
           bools=_fn in ("add", "multiply", "maximum"))
add(case("numpy.power", "i32[4]", 2, label="int_pow_int"),
    case("numpy.power", "i32[4]", "i32[4]:idx3", label="int_arrays"),
    case("numpy.power", "f32[2,3]", 2, transforms=FULL, ulp=4, label="square"),
    case("numpy.power", 2.0, "f32[3]", transforms=("eager", "jit", "grad"), ulp=16,
         label="scalar_base"),
    case("numpy.add", True, "bool[3]", label="bool_py"),
    case("numpy.add", "f32[2,3]", "f32[4]", label="bad_broadcast", transforms=("eager", "jit")),
    case("numpy.multiply", "u8[4]", 3, label="u8_weak"),
    case("numpy.multiply", "i8[4]", "u8[4]", label="i8_u8"),
    case("numpy.floor_divide", "i32[5]", "i32[5]:pos", label="int_neg"),
    case("numpy.remainder", "i32[5]", "i32[5]:pos", label="int_neg"),
    case("numpy.subtract", "bool[3]", "bool[3]", label="bool_error", transforms=("eager",)))

for _fn in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    binary("numpy." + _fn, ("wide", "wide"), diff=False, bools=True, variants=3)
for _fn in ("logical_and", "logical_or", "logical_xor"):
    add(case("numpy." + _fn, "bool[2,3]", "bool[3]"), case("numpy." + _fn, "f32[3]", "i32[3]"),
        case("numpy." + _fn, "bool[4]", True))
for _fn in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    binary("numpy." + _fn, floats=False, bools=True, diff=False, variants=3)
    add(case("numpy." + _fn, "f32[3]", "f32[3]", label="float_error", transforms=("eager",)))
for _fn in ("left_shift", "right_shift"):
    binary("numpy." + _fn, ("real", "shift"), floats=False, diff=False, variants=2)

# where / clip / select-like
add(case("numpy.where", "bool[2,3]", "f32[2,3]", "f32[3]", transforms=FULL),
    case("numpy.where", "bool[3]", "f32[3]", 0.0, transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.where", "bool[3]", 1, 2.5),
    case("numpy.where", "bool[2,1]", "i32[3]", "f16[2,3]"),
    case("numpy.where", "bool[]", "f32[2]", "f32[2]", transforms=("eager", "jit", "vmap", "jvp")),
    case("numpy.where", "bool[2,3]", "f32[2,3]", label="one_missing", transforms=("eager",)))
add(case("numpy.clip", "f32[2,3]", -0.5, 0.5, transforms=FULL),
    case("numpy.clip", "f32[4]", kwargs={"min": 0.0}, transforms=("eager", "jit", "grad"),
         label="min_only"),
    case("numpy.clip", "f32[2,3]", "f32[3]", "f32[2,1]:gt1", transforms=NOGRAD + ("grad",)),
    case("numpy.clip", "i32[5]", 0, 3),
    case("numpy.clip", "f32[3]", label="no_bounds", transforms=("eager", "jit")))

# reductions
for _fn in ("sum", "prod", "mean"):
    reduction("numpy." + _fn, bools=True, ulp=16)
reduction("numpy.var", ulp=64, extra=[case("numpy.var", "f32[3,4]", kwargs={"ddof": 1,
                                                                              "axis": 0},
                                            transforms=("eager", "jit", "grad"), ulp=64,
                                            label="ddof1")])
reduction("numpy.std", ulp=64, domain="real",
          extra=[case("numpy.std", "f32[5]", kwargs={"ddof": 1}, ulp=64, label="ddof1",
                      transforms=("eager", "jit", "grad"))])
for _fn in ("max", "min", "amax", "amin"):
    reduction("numpy." + _fn, domain="distinct", initial=True, bools=True, ulp=1)
    add(case("numpy." + _fn, "f32[0]", label="empty_error", transforms=("eager",)),
        case("numpy." + _fn, "f32[3,4]", kwargs={"axis": 1, "where": "bool[3,4]"},
             label="where_no_initial", transforms=("eager",)))
add(case("numpy.sum", "f32[0,3]", kwargs={"axis": 0}, label="empty"),
    case("numpy.prod", "f32[0]", label="empty"),
    # past eager_kernels.FAST_MIN_SIZE a whole float product runs jit's loop eagerly too
    case("numpy.prod", "f32[20000]:near1", transforms=BASIC, label="whole_large", ulp=64),
    case("numpy.prod", "f64[128,160]:near1", transforms=BASIC, label="whole_large_2d",
         x64=True, ulp=64),
    case("numpy.sum", "f32[3,4]", kwargs={"dtype": "int32"}, label="dtype_i32"),
    case("numpy.sum", "i8[5]", label="i8_accumulates"),
    case("numpy.sum", "u8[5]", label="u8"),
    case("numpy.mean", "i32[2,3]", kwargs={"axis": 1}, label="int_mean"),
    case("numpy.sum", "f32[3,4]", kwargs={"initial": 1.5, "axis": 0}, label="initial",
         transforms=("eager", "jit", "grad")),
    case("numpy.sum", 3.0, label="python_scalar"))
for _fn in ("any", "all"):
    reduction("numpy." + _fn, diff=False, where=True, bools=True, ulp=0)
    add(case("numpy." + _fn, "bool[3,4]", kwargs={"axis": 1, "keepdims": True}, label="bool"))
for _fn in ("argmax", "argmin"):
    add(case("numpy." + _fn, "f32[3,4]:distinct"),
        case("numpy." + _fn, "f32[3,4]:distinct", kwargs={"axis": 1}, label="axis1"),
        case("numpy." + _fn, "i32[2,3]", kwargs={"axis": 0, "keepdims": True}, label="keepdims"),
        case("numpy." + _fn, "f32[4]:special", label="nan"),
        case("numpy." + _fn, "f32[0]", label="empty_error", transforms=("eager",)))
add(case("numpy.count_nonzero", "i32[3,4]"),
    case("numpy.count_nonzero", "bool[3,4]", kwargs={"axis": 1}, label="axis1"),
    case("numpy.count_nonzero", "f32[3,4]:wide", kwargs={"axis": 0, "keepdims": True},
         label="keepdims"))
add(case("numpy.ptp", "f32[3,4]:distinct", transforms=FULL, ulp=1),
    case("numpy.ptp", "i32[3,4]", kwargs={"axis": 1}, label="axis1"))
add(case("numpy.median", "f32[5]:distinct", transforms=FULL),
    case("numpy.median", "f32[3,4]:distinct", kwargs={"axis": 1},
         transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.median", "i32[4]", label="int"))
add(case("numpy.cumsum", "f32[2,3]", transforms=FULL, ulp=8),
    case("numpy.cumsum", "f32[2,3]", kwargs={"axis": 1}, transforms=FULL, ulp=8, label="axis1"),
    case("numpy.cumsum", "i32[4]", kwargs={"dtype": "float32"}, label="dtype"),
    case("numpy.cumsum", "bool[4]", label="bool"),
    case("numpy.cumsum", "f16[0]", label="empty"))

# linear algebra
add(case("numpy.dot", "f32[2,3]", "f32[3,4]", transforms=FULL, ulp=16),
    case("numpy.dot", "f32[3]", "f32[3]", transforms=FULL, ulp=16),
    case("numpy.dot", "f32[2,3]", 2.0, label="scalar"),
    case("numpy.dot", "i32[2,3]", "f32[3]", label="mixed"),
    case("numpy.dot", "f32[2,3]", "f32[2,3]", label="mismatch", transforms=("eager", "jit")),
    case("numpy.dot", "f64[2,2]", "f64[2]", x64=True, transforms=("eager", "grad"), ulp=16))
add(case("numpy.matmul", "f32[2,3]", "f32[3,4]", transforms=FULL, ulp=16),
    case("numpy.matmul", "f32[2,2,3]", "f32[3]", transforms=FULL, ulp=16),
    case("numpy.matmul", "f32[4]", "f32[1,4,2]", transforms=("eager", "jit", "vmap", "grad"),
         ulp=16),
    case("numpy.matmul", "i32[2,3]", "i32[3,2]"),
    case("numpy.matmul", "f16[2,3]", "f16[3,2]", ulp=16),
    case("numpy.matmul", "f32[2,3]", "f32[4,3]", label="mismatch", transforms=("eager", "jit")),
    case("numpy.matmul", "f32[2,3]", 2.0, label="scalar_error", transforms=("eager",)))
add(case("numpy.vdot", "f32[2,3]", "f32[2,3]", transforms=FULL, ulp=16),
    case("numpy.inner", "f32[2,3]", "f32[4,3]", transforms=FULL, ulp=16),
    case("numpy.inner", "f32[3]", 2.0),
    case("numpy.outer", "f32[2]", "f32[2,2]", transforms=FULL, ulp=4),
    case("numpy.outer", "i32[3]", "bool[2]"))
add(case("numpy.tensordot", "f32[2,3,4]", "f32[3,4,2]", transforms=FULL, ulp=16),
    case("numpy.tensordot", "f32[2,3]", "f32[3,2]", kwargs={"axes": 1}, ulp=16,
         transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.tensordot", "f32[2,3]", "f32[2,4]", kwargs={"axes": ((0,), (0,))}, ulp=16,
         label="axes_pairs", transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.tensordot", "f32[2]", "f32[2]", kwargs={"axes": 0}, label="outer"))
add(case("numpy.einsum", "ij,jk->ik", "f32[2,3]", "f32[3,4]", transforms=FULL, ulp=16),
    case("numpy.einsum", "bij,bjk->bik", "f32[2,2,3]", "f32[2,3,2]", transforms=FULL, ulp=16),
    case("numpy.einsum", "ii->", "f32[3,3]", transforms=("eager", "jit", "grad"), ulp=16),
    case("numpy.einsum", "ij->ji", "f32[2,3]", label="transpose"),
    case("numpy.einsum", "i,j", "f32[2]", "f32[3]", label="implicit_outer",
         transforms=("eager", "jit", "grad")),
    case("numpy.einsum", "...j,j->...", "f32[2,2,3]", "f32[3]", label="ellipsis", ulp=16),
    case("numpy.einsum", "f32[2,3]", [0, 1], "f32[3,4]", [1, 2], [0, 2], label="sublist",
         static=(1, 3, 4), ulp=16),
    case("numpy.einsum", "ij,jk", "i32[2,3]", "i32[3,2]", label="int"))
add(case("numpy.trace", "f32[3,3]", transforms=FULL),
    case("numpy.trace", "f32[2,3,4]", kwargs={"axis1": 1, "axis2": 2, "offset": 1},
         label="axes"),
    case("numpy.diagonal", "f32[3,4]", transforms=FULL),
    case("numpy.diagonal", "f32[3,4]", kwargs={"offset": -1}, label="offset"),
    case("numpy.diag", "f32[3]", transforms=FULL),
    case("numpy.diag", "f32[3,4]", kwargs={"k": 1}, label="extract"))

# shape ops
for _fn, _args, _kw, _st in [
        ("reshape", ["f32[2,3]", (3, 2)], {}, ()), ("reshape", ["f32[2,3]", -1], {}, (1,)),
        ("reshape", ["f32[2,3]", (6, -1)], {}, ()),
        ("reshape", ["f32[2,3]", (4, 2)], {}, ()),
        ("ravel", ["f32[2,3]"], {}, ()), ("transpose", ["f32[2,3,4]"], {}, ()),
        ("transpose", ["f32[2,3,4]", (1, 2, 0)], {}, ()),
        ("transpose", ["f32[2,3,4]"], {"axes": (0, -1, 1)}, ()),
        ("matrix_transpose", ["f32[2,3,4]"], {}, ()), ("swapaxes", ["f32[2,3,4]", 0, 2], {},
                                                       (1, 2)),
        ("moveaxis", ["f32[2,3,4]", 0, -1], {}, (1, 2)),
        ("moveaxis", ["f32[2,3,4]", (0, 1), (2, 0)], {}, ()),
        ("expand_dims", ["f32[2,3]", 1], {}, (1,)), ("expand_dims", ["f32[2,3]", (0, 3)], {}, ()),
        ("squeeze", ["f32[1,3,1]"], {}, ()), ("squeeze", ["f32[1,3,1]"], {"axis": 2}, ()),
        ("squeeze", ["f32[2,3]"], {"axis": 0}, ()),
        ("broadcast_to", ["f32[3]", (2, 3)], {}, ()), ("broadcast_to", ["f32[2,1]", (2, 4)], {},
                                                       ()),
        ("broadcast_to", ["f32[3]", (4,)], {}, ()),
        ("atleast_1d", ["f32[]"], {}, ()), ("atleast_2d", ["f32[3]"], {}, ()),
        ("atleast_3d", ["f32[2,3]"], {}, ()), ("atleast_1d", [1.5], {}, ()),
        ("concatenate", [["f32[2,3]", "f32[1,3]"]], {}, ()),
        ("concatenate", [["f32[2,3]", "f32[2,1]"]], {"axis": 1}, ()),
        ("concatenate", [["f32[2,3]", "i32[2,3]"]], {"axis": None}, ()),
        ("concatenate", [["f32[2,3]", "f32[3]"]], {}, ()),
        ("concat", [["f32[2]", "f32[3]"]], {}, ()),
        ("stack", [["f32[2,3]", "f32[2,3]"]], {}, ()),
        ("stack", [["f32[2]", "f32[2]", "f32[2]"]], {"axis": -1}, ()),
        ("stack", [["f32[2]", "f32[3]"]], {}, ()),
        ("vstack", [["f32[3]", "f32[2,3]"]], {}, ()), ("hstack", [["f32[2]", "f32[3]"]], {}, ()),
        ("dstack", [["f32[2]", "f32[2]"]], {}, ()), ("column_stack", [["f32[2]", "f32[2,2]"]],
                                                     {}, ()),
        ("split", ["f32[4,3]", 2], {}, (1,)), ("split", ["f32[5]", [1, 3]], {}, ()),
        ("split", ["f32[2,4]", 2], {"axis": 1}, (1,)), ("split", ["f32[5]", 2], {}, (1,)),
        ("array_split", ["f32[5]", 2], {}, (1,)), ("hsplit", ["f32[2,4]", 2], {}, (1,)),
        ("vsplit", ["f32[4,2]", 2], {}, (1,)),
        ("tile", ["f32[2,3]", (2, 1)], {}, ()), ("tile", ["f32[3]", 2], {}, (1,)),
        ("repeat", ["f32[2,3]", 2], {}, (1,)), ("repeat", ["f32[2,3]", 2], {"axis": 0}, (1,)),
        ("repeat", ["f32[3]", [1, 0, 2]], {"total_repeat_length": 3}, ()),
        ("flip", ["f32[2,3]"], {}, ()), ("flip", ["f32[2,3]"], {"axis": 1}, ()),
        ("fliplr", ["f32[2,3]"], {}, ()), ("flipud", ["f32[2,3]"], {}, ()),
        ("roll", ["f32[2,3]", 1], {}, (1,)), ("roll", ["f32[2,3]", -1], {"axis": 1}, (1,)),
        ("roll", ["f32[2,3]", (1, 2)], {"axis": (0, 1)}, ()),
        ("pad", ["f32[2,3]", 1], {}, (1,)), ("pad", ["f32[2,3]", ((0, 1), (2, 0))], {}, ()),
        ("pad", ["f32[3]", (1, 2)], {"constant_values": 5.0}, ()),
        ("pad", ["f32[4]", 2], {"mode": "edge"}, (1,)),
        ("pad", ["f32[4]", 2], {"mode": "reflect"}, (1,)),
        ("tril", ["f32[3,4]"], {}, ()), ("tril", ["f32[3,3]"], {"k": -1}, ()),
        ("triu", ["f32[3,4]"], {}, ()), ("triu", ["f32[2,3,3]"], {"k": 1}, ())]:
    _diff = any(is_spec(a) and a.startswith("f") or isinstance(a, list) for a in _args)
    add(case("numpy." + _fn, *_args, kwargs=_kw, static=_st,
             transforms=("eager", "jit", "vmap", "grad", "jvp") if _diff else NOGRAD))
add(case("numpy.reshape", "i32[2,3]", (3, 2), label="int"),
    case("numpy.ravel", "bool[2,2]", label="bool"),
    case("numpy.broadcast_arrays", "f32[3]", "f32[2,1]", transforms=FULL),
    case("numpy.broadcast_arrays", "i32[3]", 1.0),
    case("numpy.meshgrid", "f32[2]", "f32[3]", transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.meshgrid", "f32[2]", "f32[3]", kwargs={"indexing": "ij"}, label="ij"),
    case("numpy.shape", "f32[2,3]", transforms=("eager",)),
    case("numpy.ndim", "f32[2,3]", transforms=("eager",)),
    case("numpy.size", "f32[2,3]", transforms=("eager",)),
    case("numpy.size", "f32[2,3]", kwargs={"axis": 1}, transforms=("eager",), label="axis"),
    case("numpy.isscalar", "f32[]", transforms=("eager",)),
    case("numpy.isscalar", 1.0, transforms=("eager",), static=(0,)),
    case("numpy.broadcast_shapes", (2, 1), (3,), transforms=("eager",)),
    case("numpy.broadcast_shapes", (2,), (3,), transforms=("eager",)))

# creation
for _fn, _args, _kw in [
        ("zeros", [(2, 3)], {}), ("zeros", [3], {"dtype": "int32"}), ("zeros", [()], {}),
        ("ones", [(2, 0)], {}), ("ones", [(2,)], {"dtype": "float16"}), ("ones", [4], {}),
        ("full", [(2, 3), 1.5], {}), ("full", [3, 2], {}), ("full", [(2,), True], {}),
        ("full", [(2,), 1.5], {"dtype": "int32"}), ("empty", [(2, 3)], {}),
        ("arange", [5], {}), ("arange", [1, 7, 2], {}), ("arange", [0.0, 1.0, 0.25], {}),
        ("arange", [3], {"dtype": "float32"}), ("arange", [5, 1, -1], {}),
        ("arange", [2.5], {}),
        ("linspace", [0.0, 1.0, 5], {}), ("linspace", [0, 10, 4], {"endpoint": False}),
        ("linspace", [0.0, 1.0, 5], {"dtype": "int32"}), ("linspace", [1.0, 2.0, 3],
                                                          {"retstep": True}),
        ("logspace", [0.0, 2.0, 3], {}), ("logspace", [0.0, 3.0, 4], {"base": 2.0}),
        ("eye", [3], {}), ("eye", [2, 3], {"k": 1}), ("eye", [3], {"dtype": "int32"}),
        ("identity", [3], {}), ("identity", [2], {"dtype": "bool"}),
        ("tri", [3], {}), ("tri", [2, 3], {"k": -1}),
        ("indices", [(2, 3)], {}), ("diag_indices", [3], {}), ("tril_indices", [3], {}),
        ("triu_indices", [3], {"k": 1}), ("tril_indices", [3, -1, 4], {}),
        ("zeros", [(2, -1)], {}), ("arange", [], {})]:
    add(case("numpy." + _fn, *_args, kwargs=_kw, static=range(len(_args)), transforms=BASIC))
for _fn in ("zeros_like", "ones_like", "empty_like"):
    add(case("numpy." + _fn, "f32[2,3]"), case("numpy." + _fn, "i32[3]",
                                                kwargs={"dtype": "float16"}))
add(case("numpy.full_like", "f32[2,3]", 2.0, transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.full_like", "i32[3]", 2.7),
    case("numpy.full_like", "f32[3]", 1, kwargs={"dtype": "bool"}))
add(case("numpy.asarray", "f32[2,3]", transforms=FULL),
    case("numpy.asarray", [1, 2, 3], static=(0,), transforms=("eager",)),
    case("numpy.asarray", [1.0, 2], static=(0,), transforms=("eager",), label="floatlist"),
    case("numpy.asarray", 3.0, transforms=BASIC),
    case("numpy.asarray", "i32[3]", kwargs={"dtype": "float32"}, label="dtype"),
    case("numpy.array", "f32[2,3]", transforms=("eager", "jit", "vmap", "grad")),
    case("numpy.array", [[1, 2], [3, 4]], static=(0,), transforms=("eager",)),
    case("numpy.array", True, static=(0,), transforms=("eager",)),
    case("numpy.array", "f32[3]", kwargs={"dtype": "int32"}, label="dtype"))
add(case("numpy.result_type", "f32[2]", 1.0, transforms=("eager",), post=("name",)),
    case("numpy.result_type", "i32[2]", "f16[2]", transforms=("eager",), post=("name",)),
    case("numpy.result_type", "float32", "int32", static=(0, 1), transforms=("eager",),
         post=("name",)),
    case("numpy.promote_types", "int8", "uint8", transforms=("eager",), post=("name",)),
    case("numpy.promote_types", "float16", "int32", transforms=("eager",), post=("name",)),
    case("numpy.finfo", "float32", transforms=("eager",), post=("eps", "max", "tiny", "bits")),
    case("numpy.finfo", "float16", transforms=("eager",), post=("eps", "max", "tiny", "bits")),
    case("numpy.iinfo", "int32", transforms=("eager",), post=("min", "max", "bits")),
    case("numpy.iinfo", "uint8", transforms=("eager",), post=("min", "max", "bits")),
    case("numpy.issubdtype", "float32", Ref("numpy.floating"), transforms=("eager",)),
    case("numpy.issubdtype", "int32", Ref("numpy.inexact"), transforms=("eager",)))
for _name in ("float32", "int32", "float16", "bool_", "uint8", "int8"):
    add(case("numpy." + _name, 1.5 if "float" in _name else 3, static=(0,), transforms=("eager",)),
        case("numpy." + _name, "f32[3]:wide", transforms=BASIC))

# indexing
add(case("numpy.take", "f32[5]", "i32[3]:idx5", transforms=FULL),
    case("numpy.take", "f32[3,4]", "i32[2]:idx4", kwargs={"axis": 1}, transforms=FULL,
         label="axis1"),
    case("numpy.take", "f32[3,4]", "i32[2,2]:idx12", label="flat"),
    case("numpy.take", "f32[3,4]", 1, kwargs={"axis": 0}, label="scalar_index"),
    case("numpy.take", "f32[4]", "i32[3]:idxm6", kwargs={"mode": "clip"}, label="clip"),
    case("numpy.take", "f32[4]", "i32[3]:idxm6", kwargs={"mode": "fill", "fill_value": -1.0},
         label="fill"),
    case("numpy.take", "f32[4]", "i32[3]:idxm6", label="default_oob"))
add(case("numpy.take_along_axis", "f32[3,4]", "i32[3,2]:idx4", transforms=FULL,
         label="default_axis"),
    case("numpy.take_along_axis", "f32[3,4]", "i32[2,4]:idx3", 0, static=(2,), transforms=FULL,
         label="axis0"),
    case("numpy.take_along_axis", "f32[6]", "i32[3]:idx6", kwargs={"axis": None},
         label="axis_none"),
    case("numpy.take_along_axis", "i32[3,4]", "i32[3,1]:idx4", kwargs={"axis": 1},
         label="int"))
add(case("numpy.put", "f32[5]", "i32[2]:idx5", 1.5, kwargs={"inplace": False},
         transforms=NOGRAD),
    case("numpy.put_along_axis", "f32[3,4]", "i32[3,1]:idx4", "f32[3,1]", 1,
         kwargs={"inplace": False}, static=(3,), transforms=("eager", "jit", "vmap", "grad")))
add(case("numpy.nonzero", "i32[5]", transforms=("eager",)),
    case("numpy.nonzero", "bool[2,3]", kwargs={"size": 4}, transforms=BASIC, label="size"),
    case("numpy.nonzero", "f32[5]:wide", kwargs={"size": 6, "fill_value": -1},
         transforms=BASIC, label="fill"),
    case("numpy.nonzero", "i32[5]", label="jit_error", transforms=("jit",)),
    case("numpy.argwhere", "bool[2,3]", transforms=("eager",)),
    case("numpy.argwhere", "i32[5]", kwargs={"size": 3}, transforms=BASIC, label="size"),
    case("numpy.unravel_index", "i32[3]:idx6", (2, 3), transforms=NOGRAD),
    case("numpy.unravel_index", 4, (2, 3), transforms=BASIC),
    case("numpy.ravel_multi_index", ["i32[3]:idx2", "i32[3]:idx3"], (2, 3)),
    case("numpy.ix_", "i32[2]:idx3", "i32[3]:idx4", transforms=BASIC))

# sorting
add(case("numpy.sort", "f32[2,4]:distinct", transforms=FULL),
    case("numpy.sort", "f32[2,4]:distinct", kwargs={"axis": 0}, label="axis0"),
    case("numpy.sort", "f32[5]:special", label="nan"),
    case("numpy.sort", "i32[6]", kwargs={"descending": True}, label="desc"),
    case("numpy.sort", "f32[2,3]", kwargs={"axis": None}, label="axis_none",
         transforms=("eager", "jit", "grad")),
    case("numpy.argsort", "f32[2,4]:distinct"),
    case("numpy.argsort", "i32[7]", label="stable_ties"),
    case("numpy.argsort", "i32[7]", kwargs={"descending": True}, label="desc_ties"),
    case("numpy.argsort", "f32[5]:special", label="nan"))

# ---------------------------------------------------------------- Array operators and methods

ARRAY_OPS = {
    "getitem": lambda x, *idx, index: x[_index(index, idx)],
    "at_set": lambda x, v, *idx, index: x.at[_index(index, idx)].set(v),
    "at_add": lambda x, v, *idx, index: x.at[_index(index, idx)].add(v),
    "at_mul": lambda x, v, *idx, index: x.at[_index(index, idx)].multiply(v),
    "at_min": lambda x, v, *idx, index: x.at[_index(index, idx)].min(v),
    "at_max": lambda x, v, *idx, index: x.at[_index(index, idx)].max(v),
    "at_get": lambda x, *idx, index, **kw: x.at[_index(index, idx)].get(**kw),
    "pow": operator.pow, "rpow": lambda x, y: y ** x, "matmul": operator.matmul,
    "floordiv": operator.floordiv, "mod": operator.mod, "truediv": operator.truediv,
    "rsub": lambda x, y: y - x, "neg": operator.neg, "abs": operator.abs,
    "invert": operator.invert, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lt": operator.lt, "eq": operator.eq, "lshift": operator.lshift,
    "astype": lambda x, dtype: x.astype(dtype), "T": lambda x: x.T,
    "method_sum": lambda x, **kw: x.sum(**kw), "method_mean": lambda x, **kw: x.mean(**kw),
    "method_max": lambda x, **kw: x.max(**kw), "method_argmax": lambda x, **kw: x.argmax(**kw),
    "method_reshape": lambda x, *s: x.reshape(*s), "method_transpose": lambda x, *a:
    x.transpose(*a), "method_flatten": lambda x: x.flatten(), "method_ravel": lambda x: x.ravel(),
    "method_squeeze": lambda x, **kw: x.squeeze(**kw), "method_clip": lambda x, **kw:
    x.clip(**kw), "method_round": lambda x, *a: x.round(*a), "method_var": lambda x, **kw:
    x.var(**kw), "method_std": lambda x, **kw: x.std(**kw), "method_prod": lambda x, **kw:
    x.prod(**kw), "method_any": lambda x, **kw: x.any(**kw), "method_dot": lambda x, y:
    x.dot(y), "method_swapaxes": lambda x, a, b: x.swapaxes(a, b), "method_cumsum":
    lambda x, **kw: x.cumsum(**kw), "method_argsort": lambda x: x.argsort(),
    "method_sort": lambda x: x.sort(), "method_min": lambda x, **kw: x.min(**kw),
    "method_all": lambda x, **kw: x.all(**kw), "method_take": lambda x, i: x.take(i),
    "len": len, "item": lambda x: x.item(), "float": float, "int": int, "bool": bool,
    "ndim": lambda x: x.ndim, "size": lambda x: x.size, "shape": lambda x: x.shape,
    "iter": lambda x: tuple(x), "real_attr": lambda x: x.real,
}


def _index(index, dyn):
    """A static index expression with `"@k"` placeholders for the k-th dynamic index array."""
    def sub(i):
        if isinstance(i, str) and i.startswith("@"):
            return dyn[int(i[1:])]
        if isinstance(i, tuple):
            return tuple(sub(j) for j in i)
        return i
    return sub(index)


S = slice
for _label, _x, _index_expr, _idx in [
        ("int", "f32[3,4]", 1, ()), ("neg_int", "f32[3,4]", -1, ()),
        ("tuple", "f32[3,4]", (1, 2), ()), ("slice", "f32[5]", S(1, 4), ()),
        ("slice_step", "f32[6]", S(None, None, 2), ()), ("slice_neg", "f32[6]",
                                                          S(None, None, -1), ()),
        ("slice2d", "f32[3,4]", (S(None), S(1, 3)), ()),
        ("ellipsis", "f32[2,3,4]", (Ellipsis, 0), ()),
        ("newaxis", "f32[3]", (None, S(None), None), ()),
        ("array", "f32[5]", "@0", ("i32[3]:idx5",)), ("array2d", "f32[3,4]", ("@0", "@1"),
                                                      ("i32[2]:idx3", "i32[2]:idx4")),
        ("array_slice", "f32[3,4]", (S(None), "@0"), ("i32[2]:idxm4",)),
        ("bool_mask", "f32[4]", "@0", ("bool[4]",)),
        ("scalar_dyn", "f32[4]", "@0", ("i32[]:idx4",)),
        ("out_of_range", "f32[3]", 5, ()), ("too_many", "f32[3]", (0, 0), ()),
        ("list", "f32[4]", [0, 2], ()), ("empty_slice", "f32[4]", S(3, 1), ())]:
    _tr = ("eager",) if _label in ("out_of_range", "too_many", "bool_mask") else (
        FULL if _label in ("int", "array", "slice2d") else ("eager", "jit", "vmap", "grad"))
    add(case("array.getitem", _x, *_idx, kwargs={"index": _index_expr}, transforms=_tr,
             label=_label))
add(case("array.getitem", "f32[4]", "bool[4]", kwargs={"index": "@0"}, transforms=("jit",),
         label="bool_mask_jit"))
for _op in ("set", "add", "mul", "min", "max"):
    add(case(f"array.at_{_op}", "f32[5]", "f32[2]", "i32[2]:idx5", kwargs={"index": "@0"},
             transforms=FULL if _op != "mul" else NOGRAD),
        case(f"array.at_{_op}", "f32[3,4]", 2.0, kwargs={"index": (S(None), 1)},
             transforms=NOGRAD + ("grad",), label="slice_scalar"))
add(case("array.at_add", "f32[4]", "f32[3]", "i32[3]:idx2", kwargs={"index": "@0"},
         transforms=FULL, label="duplicates"),
    case("array.at_set", "i32[4]", 2.7, kwargs={"index": 1}, label="int_weak"),
    case("array.at_get", "f32[4]", "i32[3]:idxm6", kwargs={"index": "@0", "mode": "fill",
                                                           "fill_value": 0.5}, label="fill"),
    case("array.at_get", "f32[4]", "i32[2]:idx4", kwargs={"index": "@0"}, transforms=FULL))
for _op, _a, _b, _tr in [
        ("pow", "f32[3]:pos", 2, FULL), ("pow", "f32[3]:pos", 0.5, FULL),
        ("pow", "i32[3]:pos", 2, NOGRAD), ("pow", "f32[3]:pos", "f32[3]", FULL),
        ("rpow", "f32[3]", 2.0, FULL), ("pow", "i32[3]", -1, ("eager",)),
        ("matmul", "f32[2,3]", "f32[3]", FULL), ("floordiv", "f32[4]", 2, NOGRAD),
        ("mod", "i32[4]", 3, NOGRAD), ("truediv", "i32[4]", 2, NOGRAD),
        ("truediv", "f32[3]", "f32[3]:nz", FULL), ("rsub", "f32[3]", 1, FULL),
        ("and", "bool[3]", True, NOGRAD), ("or", "i32[3]", 6, NOGRAD),
        ("xor", "bool[3]", "bool[3]", NOGRAD), ("lt", "f32[3]", 0.0, NOGRAD),
        ("eq", "i32[3]", 1.0, NOGRAD), ("lshift", "i32[3]", 2, NOGRAD),
        ("lt", "f32[2]", "f32[3]", ("eager",))]:
    add(case("array." + _op, _a, _b, transforms=_tr))
for _op, _a, _tr in [("neg", "f32[3]", FULL), ("abs", "i32[3]", NOGRAD),
                     ("invert", "bool[3]", NOGRAD), ("T", "f32[2,3]", FULL),
                     ("method_flatten", "f32[2,3]", NOGRAD), ("method_ravel", "f32[2,3]",
                                                              NOGRAD),
                     ("method_argsort", "f32[4]:distinct", NOGRAD),
                     ("method_sort", "f32[4]:distinct", ("eager", "jit", "grad")),
                     ("len", "f32[3,2]", ("eager",)), ("item", "f32[]", ("eager",)),
                     ("item", "f32[2]", ("eager",)), ("float", "f32[]", ("eager", "jit")),
                     ("int", "f32[]:pos", ("eager",)), ("bool", "f32[2]", ("eager",)),
                     ("ndim", "f32[2,3]", ("eager",)), ("size", "f32[2,3]", ("eager",)),
                     ("shape", "f32[2,3]", ("eager",)), ("iter", "f32[2,3]", NOGRAD),
                     ("real_attr", "f32[3]", BASIC)]:
    add(case("array." + _op, _a, transforms=_tr))
for _op, _a, _kw, _tr in [
        ("method_sum", "f32[2,3]", {"axis": 0}, FULL), ("method_mean", "i32[2,3]", {}, NOGRAD),
        ("method_max", "f32[2,3]:distinct", {"axis": 1, "keepdims": True}, FULL),
        ("method_argmax", "f32[2,3]:distinct", {"axis": 1}, NOGRAD),
        ("method_squeeze", "f32[1,3]", {}, NOGRAD), ("method_clip", "f32[4]", {"min": 0.0},
                                                      ("eager", "jit", "grad")),
        ("method_var", "f32[2,3]", {"axis": 1}, ("eager", "jit", "grad")),
        ("method_std", "f32[5]", {"ddof": 1}, ("eager", "jit", "grad")),
        ("method_prod", "f32[2,3]", {"axis": 1}, ("eager", "jit", "grad")),
        ("method_any", "f32[2,3]:wide", {"axis": 0}, NOGRAD),
        ("method_all", "bool[2,3]", {}, NOGRAD), ("method_min", "i32[2,3]", {"axis": 0}, NOGRAD),
        ("method_cumsum", "f32[2,3]", {"axis": 1}, ("eager", "jit", "grad"))]:
    add(case("array." + _op, _a, kwargs=_kw, transforms=_tr, ulp=16))
add(case("array.astype", "f32[3]:wide", "int32", transforms=NOGRAD),
    case("array.astype", "f32[3]", "float16", transforms=FULL),
    case("array.astype", "i32[3]", "bool", transforms=NOGRAD),
    case("array.astype", "f32[3]", "float64", transforms=BASIC, label="f64_no_x64"),
    case("array.method_reshape", "f32[2,3]", 3, 2, static=(1, 2), transforms=FULL),
    case("array.method_reshape", "f32[2,3]", (-1,), transforms=NOGRAD),
    case("array.method_transpose", "f32[2,3,4]", 2, 0, 1, static=(1, 2, 3), transforms=FULL),
    case("array.method_transpose", "f32[2,3]", transforms=NOGRAD),
    case("array.method_round", "f32[3]:wide", 1, static=(1,), transforms=BASIC),
    case("array.method_dot", "f32[2,3]", "f32[3,2]", transforms=FULL, ulp=16),
    case("array.method_swapaxes", "f32[2,3]", 0, 1, static=(1, 2), transforms=NOGRAD),
    case("array.method_take", "f32[4]", "i32[2]:idx4", transforms=NOGRAD))

# ---------------------------------------------------------------- jax.lax

for _fn, _dom, _ulp in [
        ("exp", "real", 8), ("exp2", "real", 8), ("log", "pos", 8), ("log1p", "pos", 8),
        ("expm1", "real", 8), ("tanh", "real", 8), ("logistic", "real", 8), ("sin", "real", 8),
        ("cos", "real", 8), ("tan", "unit", 8), ("asin", "unit", 8), ("acos", "unit", 8),
        ("atan", "real", 8), ("sinh", "real", 8), ("cosh", "real", 8), ("asinh", "real", 8),
        ("acosh", "gt1", 8), ("atanh", "unit", 8), ("sqrt", "pos", 4), ("rsqrt", "pos", 8),
        ("cbrt", "pos", 8), ("abs", "nz", 1), ("neg", "real", 1), ("sign", "nz", 1),
        ("floor", "wide", 1), ("ceil", "wide", 1), ("round", "wide", 1),
        ("reciprocal", "nz", 2), ("square", "real", 2), ("erf", "real", 16),
        ("erfc", "real", 16), ("erf_inv", "unit", 32), ("lgamma", "pos", 32),
        ("stop_gradient", "real", 1)]:
    unary("lax." + _fn, _dom, ulp=_ulp, ints=False, variants=2 if _fn != "stop_gradient" else 0,
          extra=[case("lax." + _fn, "i32[3]", label="int_error", transforms=("eager",))]
          if _fn in ("exp", "sin", "sqrt", "floor") else ())
add(case("lax.round", "f32[6]:wide", 1, static=(1,), label="to_nearest_even"),
    case("lax.round", "f32[6]:wide", 0, static=(1,), label="away"),
    case("lax.abs", "i32[4]", label="int"), case("lax.neg", "i32[4]", label="int"),
    case("lax.sign", "i32[4]", label="int"), case("lax.is_finite", "f32[5]:special"),
    case("lax.is_finite", "f16[3]"), case("lax.bitwise_not", "u8[3]"), case("lax.population_count", "u32[4]"),
    case("lax.population_count", "i32[4]"), case("lax.integer_pow", "f32[2,3]", 3, static=(1,),
                                                 transforms=FULL, ulp=4),
    case("lax.integer_pow", "f32[3]:nz", -2, static=(1,), transforms=FULL, ulp=4),
    case("lax.integer_pow", "i32[3]", 2, static=(1,)),
    case("lax.integer_pow", "f32[3]", 0, static=(1,), transforms=("eager", "jit", "grad")))
for _fn, _dom, _ulp, _diff, _ints in [
        ("add", ("real", "real"), 1, True, True), ("sub", ("real", "real"), 1, True, True),
        ("mul", ("real", "real"), 1, True, True), ("div", ("real", "nz"), 2, True, True),
        ("rem", ("real", "nz"), 2, True, True), ("pow", ("pos", "real"), 16, True, False),
        ("max", ("distinct", "real"), 1, True, True), ("min", ("distinct", "real"), 1, True,
                                                       True),
        ("atan2", ("real", "nz"), 8, True, False), ("nextafter", ("real", "real"), 0, False,
                                                    False)]:
    add(case("lax." + _fn, f"f32[2,3]:{_dom[0]}", f"f32[2,3]:{_dom[1]}",
             transforms=FULL if _diff else NOGRAD, ulp=_ulp),
        case("lax." + _fn, f"f32[3]:{_dom[0]}", 2.0, ulp=_ulp, label="weak_scalar"),
        case("lax." + _fn, 1, 1.0, label="mixed_dtype_error", transforms=("eager", "jit")),
        case("lax." + _fn, "f32[3]", "i32[3]", label="mixed_array_error", transforms=("eager",)),
        case("lax." + _fn, "f32[2,3]", "f32[3]", label="shape_error", transforms=("eager",)),
        case("lax." + _fn, f"f16[3]:{_dom[0]}", f"f16[3]:{_dom[1]}", ulp=_ulp))
    if _ints:
        add(case("lax." + _fn, "i32[4]", "i32[4]:pos", label="int"))
for _fn in ("eq", "ne", "lt", "le", "gt", "ge"):
    add(case("lax." + _fn, "f32[2,3]:wide", "f32[2,3]:wide"),
        case("lax." + _fn, "i32[3]", 1, label="weak"),
        case("lax." + _fn, "f32[3]", "i32[3]", label="mixed_error", transforms=("eager",)))
for _fn in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    add(case("lax." + _fn, "i32[2,3]", "i32[2,3]"), case("lax." + _fn, "bool[3]", "bool[3]"),
        case("lax." + _fn, "f32[3]", "f32[3]", label="float_error", transforms=("eager",)))
for _fn in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
    add(case("lax." + _fn, "i32[5]", "i32[5]:shift"), case("lax." + _fn, "u8[4]", "u8[4]:shift"))
add(case("lax.convert_element_type", "f32[2,3]:wide", "int32", transforms=NOGRAD),
    case("lax.convert_element_type", "f32[3]", "float16", transforms=FULL),
    case("lax.convert_element_type", "i32[3]", "float32", transforms=NOGRAD),
    case("lax.convert_element_type", "f32[4]:special", "int32", label="nonfinite"),
    case("lax.convert_element_type", "f32[3]", "bool", label="bool"),
    case("lax.bitcast_convert_type", "f32[3]", "int32"),
    case("lax.bitcast_convert_type", "u32[3]", "float32"),
    case("lax.select", "bool[2,3]", "f32[2,3]", "f32[2,3]", transforms=FULL),
    case("lax.select", "bool[3]", "f32[3]", "i32[3]", label="mixed_error", transforms=("eager",)),
    case("lax.select_n", "bool[2,3]", "f32[2,3]", "f32[2,3]", transforms=FULL),
    case("lax.select_n", "i32[4]:idx3", "f32[4]", "f32[4]", "f32[4]", transforms=FULL),
    case("lax.select_n", "bool[]", "f32[3]", "f32[3]", transforms=FULL, label="scalar_pred"),
    case("lax.select_n", "f32[3]", "f32[3]", "f32[3]", label="float_pred_error",
         transforms=("eager",)),
    case("lax.clamp", -0.5, "f32[2,3]", 0.5, transforms=("eager", "jit", "vmap", "grad", "jvp")),
    case("lax.clamp", "f32[3]", "f32[3]", "f32[3]:gt1", transforms=FULL),
    case("lax.clamp", "i32[]", "i32[4]", "i32[]", label="int"))
add(case("lax.reduce_sum", "f32[3,4]", (0,), transforms=FULL, ulp=16),
    case("lax.reduce_sum", "i32[2,3]", (0, 1)),
    case("lax.reduce_max", "f32[3,4]:distinct", (1,), transforms=FULL),
    case("lax.reduce_min", "f32[3,4]:distinct", (0, 1), transforms=FULL),
    case("lax.reduce_prod", "f32[3,4]:pos", (1,), transforms=FULL, ulp=16),
    case("lax.reduce_and", "bool[3,4]", (1,)), case("lax.reduce_or", "bool[3,4]", (0,)),
    case("lax.reduce_max", "i32[3,4]", (1,), label="int"),
    case("lax.reduce_sum", "f32[3]", (1,), label="bad_axis", transforms=("eager",)),
    case("lax.argmax", "f32[3,4]:distinct", 1, "int32", static=(1,)),
    case("lax.argmin", "f32[3,4]:distinct", 0, "int32", static=(1,)),
    case("lax.argmax", "i32[5]", 0, "int32", static=(1,), label="ties"),
    case("lax.cumsum", "f32[2,3]", 1, transforms=FULL, static=(1,), ulp=8),
    case("lax.cumsum", "i32[5]", kwargs={"reverse": True}, label="reverse"))
add(case("lax.dot_general", "f32[2,3]", "f32[3,4]", (((1,), (0,)), ((), ())), transforms=FULL,
         ulp=16),
    case("lax.dot_general", "f32[2,3,4]", "f32[2,4,5]", (((2,), (1,)), ((0,), (0,))),
         transforms=FULL, ulp=16, label="batch"),
    case("lax.dot_general", "f32[3,2]", "f32[3,4]", (((0,), (0,)), ((), ())), transforms=FULL,
         ulp=16, label="lhs_contract0"),
    case("lax.dot_general", "f32[2,3]", "f32[4,3]", (((1,), (0,)), ((), ())),
         label="mismatch", transforms=("eager",)),
    case("lax.dot_general", "i32[2,3]", "i32[3]", (((1,), (0,)), ((), ())), label="int"),
    case("lax.dot_general", "f32[2,3]", "f32[3]", (((1,), (0,)), ((), ())),
         kwargs={"preferred_element_type": "float32"}, label="preferred"),
    case("lax.dot", "f32[2,3]", "f32[3,2]", transforms=FULL, ulp=16),
    case("lax.dot", "f32[3]", "f32[3]", label="vec"),
    case("lax.dot", "f32[3]", "i32[3]", label="mixed_error", transforms=("eager",)))
for _lbl, _lhs, _rhs, _args, _kw in [
        ("basic", "f32[1,2,5,5]", "f32[3,2,3,3]", ((1, 1), "VALID"), {}),
        ("same_stride", "f32[2,1,5,4]", "f32[2,1,3,2]", ((2, 1), "SAME"), {}),
        ("pads_dil", "f32[1,1,5,5]", "f32[1,1,2,2]", ((1, 1), ((1, 0), (0, 2))),
         {"lhs_dilation": (1, 2), "rhs_dilation": (2, 1)}),
        ("nhwc", "f32[1,5,5,2]", "f32[3,3,2,4]", ((1, 1), "SAME"),
         {"dimension_numbers": ("NHWC", "HWIO", "NHWC")}),
        ("groups", "f32[1,4,4,4]", "f32[4,2,2,2]", ((1, 1), "VALID"),
         {"feature_group_count": 2}),
        ("conv1d", "f32[2,2,6]", "f32[3,2,3]", ((2,), "VALID"), {})]:
    add(case("lax.conv_general_dilated", _lhs, _rhs, *_args, kwargs=_kw, static=(2, 3),
             transforms=FULL if _lbl in ("basic", "nhwc") else ("eager", "jit", "vmap", "grad"),
             ulp=32, label=_lbl))
add(case("lax.conv", "f32[1,2,4,4]", "f32[2,2,3,3]", (1, 1), "SAME", transforms=FULL, ulp=32),
    case("lax.conv_with_general_padding", "f32[1,1,4,4]", "f32[1,1,2,2]", (1, 1),
         ((1, 1), (0, 0)), (1, 1), (1, 1), ulp=32, transforms=("eager", "jit", "grad")),
    case("lax.conv_transpose", "f32[1,4,4,2]", "f32[3,3,2,1]", (2, 2), "SAME",
         kwargs={"dimension_numbers": ("NHWC", "HWIO", "NHWC")}, ulp=32,
         transforms=("eager", "jit", "grad")),
    case("lax.conv_general_dilated", "f32[1,2,5,5]", "f32[3,3,3,3]", (1, 1), "VALID",
         static=(2, 3), label="feature_mismatch", transforms=("eager",)),
    case("lax.conv_dimension_numbers", (1, 5, 5, 2), (3, 3, 2, 4), ("NHWC", "HWIO", "NHWC"),
         transforms=("eager",), post=("lhs_spec", "rhs_spec", "out_spec")),
    case("lax.padtype_to_pads", (5, 5), (3, 2), (2, 1), "SAME", transforms=("eager",)))
for _lbl, _init, _comp, _x, _args in [
        ("max_pool", -np.inf, "lax.max", "f32[1,4,4,1]", ((1, 2, 2, 1), (1, 2, 2, 1), "VALID")),
        ("sum_same", 0.0, "lax.add", "f32[1,5,5,2]", ((1, 3, 3, 1), (1, 1, 1, 1), "SAME")),
        ("min_pads", np.inf, "lax.min", "f32[6]", ((2,), (2,), ((1, 1),)))]:
    add(case("lax.reduce_window", _x, _init, Ref(_comp), *_args, static=(1, 2, 3, 4, 5),
             transforms=FULL if _lbl != "min_pads" else ("eager", "jit", "vmap", "grad"),
             label=_lbl, ulp=8))
add(case("lax.reduce_window", "f32[4,4]", 0.0, Ref("lax.add"), (2, 2), (1, 1), "VALID",
         kwargs={"window_dilation": (2, 1)}, static=(1, 2, 3, 4, 5), label="dilated",
         transforms=("eager", "jit", "grad")))
add(case("lax.broadcast_in_dim", "f32[3]", (2, 3), (1,), transforms=FULL),
    case("lax.broadcast_in_dim", "f32[3,1]", (3, 4), (0, 1), transforms=NOGRAD + ("grad",)),
    case("lax.broadcast_in_dim", "f32[3]", (2, 4), (1,), label="bad", transforms=("eager",)),
    case("lax.broadcast", "f32[3]", (2,), transforms=("eager", "jit", "vmap", "grad")),
    case("lax.reshape", "f32[2,3]", (3, 2), transforms=FULL),
    case("lax.reshape", "f32[2,3]", (3, 2), (1, 0), label="dimensions"),
    case("lax.reshape", "f32[2,3]", (4,), label="bad", transforms=("eager",)),
    case("lax.transpose", "f32[2,3,4]", (2, 0, 1), transforms=FULL),
    case("lax.squeeze", "f32[1,3,1]", (0, 2), transforms=("eager", "jit", "vmap", "grad")),
    case("lax.expand_dims", "f32[2,3]", (0, 2), transforms=("eager", "jit", "vmap", "grad")),
    case("lax.rev", "f32[2,3]", (0, 1), transforms=FULL),
    case("lax.slice", "f32[4,5]", (1, 0), (3, 5), (1, 2), transforms=FULL),
    case("lax.slice", "f32[4]", (1,), (3,), label="nostride"),
    case("lax.slice", "f32[4]", (1,), (6,), label="bad", transforms=("eager",)),
    case("lax.slice_in_dim", "f32[4,5]", 1, 4, kwargs={"stride": 2, "axis": 1},
         static=(1, 2), transforms=("eager", "jit", "vmap", "grad")),
    case("lax.index_in_dim", "f32[4,5]", 2, kwargs={"axis": 1, "keepdims": False},
         static=(1,)),
    case("lax.dynamic_slice", "f32[4,5]", ("i32[]:idx4", "i32[]:idx5"), (2, 3),
         transforms=FULL),
    case("lax.dynamic_slice", "f32[5]", (4,), (3,), label="clamped"),
    case("lax.dynamic_slice_in_dim", "f32[4,5]", "i32[]:idx5", 2, kwargs={"axis": 1},
         static=(2,), transforms=("eager", "jit", "vmap", "grad")),
    case("lax.dynamic_index_in_dim", "f32[4,5]", "i32[]:idx4", kwargs={"keepdims": False},
         transforms=("eager", "jit", "vmap", "grad")),
    case("lax.dynamic_update_slice", "f32[4,5]", "f32[2,2]", ("i32[]:idx4", 1),
         transforms=FULL),
    case("lax.dynamic_update_slice", "f32[5]", "f32[2]", (4,), label="clamped"),
    case("lax.dynamic_update_slice_in_dim", "f32[4,5]", "f32[4,2]", "i32[]:idx5", 1,
         static=(3,), transforms=("eager", "jit", "vmap", "grad")),
    case("lax.concatenate", ["f32[2,3]", "f32[1,3]"], 0, static=(1,), transforms=FULL),
    case("lax.concatenate", ["f32[2,3]", "i32[1,3]"], 0, static=(1,), label="mixed_error",
         transforms=("eager",)),
    case("lax.pad", "f32[2,3]", 0.0, ((1, 0, 0), (0, 2, 1)), transforms=FULL),
    case("lax.pad", "f32[5]", -1.0, ((-1, 1, 0),), label="negative"),
    case("lax.pad", "f32[2]", "f32[]", ((1, 1, 0),), label="traced_value",
         transforms=("eager", "jit", "vmap", "grad")),
    case("lax.iota", "int32", 4, static=(0, 1), transforms=BASIC),
    case("lax.iota", "float32", 3, static=(0, 1), transforms=BASIC),
    case("lax.broadcasted_iota", "int32", (2, 3), 1, static=(0, 1, 2), transforms=BASIC),
    case("lax.full", (2, 3), 1.5, transforms=BASIC),
    case("lax.full", (2,), 3, kwargs={"dtype": "float32"}, transforms=BASIC, label="dtype"),
    case("lax.full_like", "f32[2,3]", 2.0, transforms=("eager", "jit", "vmap", "grad")),
    case("lax.full_like", 1.5, 2),
    case("lax.full_like", "i32[3]", 1.5, kwargs={"dtype": "float32"}),
    case("lax.full_like", "f32[3]", 0, kwargs={"shape": (2, 2)}, label="shape"))
_GDN = Call("lax.GatherDimensionNumbers", offset_dims=(1,), collapsed_slice_dims=(0,),
            start_index_map=(0,))
_SDN = Call("lax.ScatterDimensionNumbers", update_window_dims=(1,),
            inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
add(case("lax.gather", "f32[5,3]", "i32[2,1]:idx5", _GDN, (1, 3), static=(2, 3),
         transforms=FULL),
    case("lax.gather", "f32[5,3]", "i32[2,1]:idx5", _GDN, (1, 3), static=(2, 3),
         kwargs={"mode": "clip"}, label="clip"),
    case("lax.gather", "f32[5,3]", "i32[2,1]:idxm8", _GDN, (1, 3), static=(2, 3),
         kwargs={"mode": "fill", "fill_value": -1.0}, label="fill"))
for _fn in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
    add(case("lax." + _fn, "f32[5,3]", "i32[2,1]:idx5", "f32[2,3]", _SDN, static=(3,),
             transforms=FULL if _fn in ("scatter_add", "scatter") else (
                 NOGRAD + ("grad",) if _fn != "scatter_mul" else NOGRAD),
             kwargs={"unique_indices": True} if _fn == "scatter" else {}))
add(case("lax.scatter_add", "f32[5,3]", "i32[2,1]:idxm8", "f32[2,3]", _SDN, static=(3,),
         kwargs={"mode": "drop"}, label="drop"))
add(case("lax.sort", "f32[2,5]:distinct", transforms=FULL),
    case("lax.sort", "f32[2,5]:distinct", 0, static=(1,), label="dim0"),
    case("lax.sort", ("i32[6]", "f32[6]"), kwargs={"num_keys": 1}, label="tuple"),
    case("lax.sort", "f32[5]:special", label="nan"),
    case("lax.sort_key_val", "f32[5]:distinct", "i32[5]", transforms=("eager", "jit", "vmap",
                                                                      "grad")),
    case("lax.top_k", "f32[2,5]:distinct", 3, static=(1,), transforms=("eager", "jit", "vmap",
                                                                       "grad", "jvp")),
    case("lax.top_k", "i32[6]", 2, static=(1,), label="ties"))


# control flow with framework-neutral bodies (operators only)
def _cf_body(i, c):
    return c * 0.9 + i


def _scan_body(c, x):
    return c * x + 1.0, c - x


def _while_cond(c):
    return c[0] < 4


def _while_body(c):
    return c[0] + 1, c[1] * 1.5


add(case("lax.fori_loop", 0, 3, _cf_body, "f32[3]", static=(0, 1, 2), transforms=FULL),
    case("lax.scan", _scan_body, "f32[2]", "f32[4,2]", static=(0,), transforms=FULL, ulp=16),
    case("lax.scan", _scan_body, "f32[]", "f32[3]", static=(0,), kwargs={"reverse": True},
         transforms=("eager", "jit", "grad"), label="reverse", ulp=16),
    case("lax.while_loop", _while_cond, _while_body, (0, "f32[2]"), static=(0, 1),
         transforms=("eager", "jit", "vmap", "jvp")),
    case("lax.cond", "bool[]", lambda x: x * 2.0, lambda x: x - 1.0, "f32[3]", static=(1, 2),
         transforms=FULL),
    case("lax.switch", "i32[]:idx3", [lambda x: x * 2.0, lambda x: x - 1.0, lambda x: -x],
         "f32[3]", static=(1,), transforms=FULL),
    case("lax.map", lambda x: x * x, "f32[3,2]", static=(0,), transforms=FULL),
    case("lax.associative_scan", Ref("lax.add"), "f32[5]", static=(0,), transforms=FULL, ulp=8),
    case("lax.associative_scan", Ref("lax.max"), "f32[2,4]", kwargs={"axis": 1,
                                                                   "reverse": True},
         static=(0,), label="max_reverse"))

# ---------------------------------------------------------------- jax.nn

for _fn, _ulp in [("relu", 1), ("relu6", 1), ("sigmoid", 8), ("silu", 8), ("swish", 8),
                  ("gelu", 16), ("elu", 8), ("celu", 8), ("selu", 8), ("leaky_relu", 2),
                  ("softplus", 8), ("soft_sign", 4), ("log_sigmoid", 8), ("hard_tanh", 1),
                  ("hard_sigmoid", 2), ("hard_silu", 4), ("hard_swish", 4), ("mish", 16),
                  ("sparse_plus", 4), ("squareplus", 8), ("tanh", 8)]:
    unary("nn." + _fn, "real", ulp=_ulp, variants=2)
add(case("nn.gelu", "f32[2,3]", kwargs={"approximate": False}, transforms=FULL, ulp=16,
         label="exact"),
    case("nn.leaky_relu", "f32[5]", 0.2, transforms=("eager", "jit", "grad"), label="slope"),
    case("nn.elu", "f32[5]", kwargs={"alpha": 0.5}, transforms=("eager", "jit", "grad"),
         label="alpha"),
    case("nn.celu", "f32[5]", kwargs={"alpha": 2.0}, label="alpha"),
    case("nn.squareplus", "f32[5]", kwargs={"b": 1.0}, label="b"))
for _fn in ("softmax", "log_softmax"):
    add(case("nn." + _fn, "f32[2,4]", transforms=FULL, ulp=16),
        case("nn." + _fn, "f32[2,4]", kwargs={"axis": 0}, transforms=FULL, ulp=16,
             label="axis0"),
        case("nn." + _fn, "f32[3,2]", kwargs={"axis": (0, 1)}, ulp=16, label="axis_tuple",
             transforms=("eager", "jit", "grad")),
        case("nn." + _fn, "f32[2,4]", kwargs={"where": "bool[2,4]"}, ulp=16, label="where",
             transforms=("eager", "jit")),
        case("nn." + _fn, "f16[4]", ulp=16), case("nn." + _fn, "f32[4]:special", label="inf"),
        case("nn." + _fn, "i32[4]", label="int"))
add(case("nn.logsumexp", "f32[2,4]", kwargs={"axis": 1}, transforms=FULL, ulp=16),
    case("nn.standardize", "f32[2,4]", transforms=FULL, ulp=64),
    case("nn.standardize", "f32[2,4]", kwargs={"axis": 0, "epsilon": 0.1}, ulp=64,
         label="axis0", transforms=("eager", "jit", "grad")),
    case("nn.glu", "f32[2,4]", transforms=FULL, ulp=8),
    case("nn.one_hot", "i32[4]:idx3", 3),
    case("nn.one_hot", "i32[2,2]:idxm5", 4, static=(1,), kwargs={"dtype": "int32"},
         label="neg_dtype"),
    case("nn.one_hot", "i32[3]:idx3", 3, static=(1,), kwargs={"axis": 0}, label="axis0"),
    case("nn.one_hot", "f32[3]:wide", 3, static=(1,), label="float_labels"),
    case("nn.one_hot", "i32[3]:idx3", 3, static=(1,), transforms=("jit",), label="static"))

# ---------------------------------------------------------------- jax.scipy.special

for _fn, _dom, _ulp in [("erf", "real", 16), ("erfc", "real", 16), ("erfinv", "unit", 32),
                        ("expit", "real", 8), ("logit", "prob", 8), ("gammaln", "pos", 32)]:
    unary("scipy.special." + _fn, _dom, ulp=_ulp, variants=2)
for _fn in ("xlogy", "xlog1py"):
    add(case("scipy.special." + _fn, "f32[2,3]", "f32[3]:pos", transforms=FULL, ulp=8),
        case("scipy.special." + _fn, "f32[4]:wide", 0.5, label="scalar"),
        case("scipy.special." + _fn, 0.0, "f32[3]:pos", label="zero_x",
             transforms=("eager", "jit", "grad")),
        case("scipy.special." + _fn, "i32[3]", "i32[3]:pos", label="int"))
add(case("scipy.special.logsumexp", "f32[2,4]", transforms=FULL, ulp=16),
    case("scipy.special.logsumexp", "f32[2,4]", kwargs={"axis": 1, "keepdims": True},
         transforms=FULL, ulp=16, label="axis1_keepdims"),
    case("scipy.special.logsumexp", "f32[2,4]", kwargs={"axis": 0, "b": "f32[2,4]:pos"},
         transforms=FULL, ulp=16, label="b"),
    case("scipy.special.logsumexp", "f32[4]", kwargs={"b": "f32[4]", "return_sign": True},
         transforms=("eager", "jit", "vmap"), ulp=16, label="return_sign"),
    case("scipy.special.logsumexp", "f32[4]:special", ulp=16, label="inf"),
    case("scipy.special.logsumexp", "f32[0]", label="empty"),
    case("scipy.special.logsumexp", "f32[2,4]", kwargs={"axis": 1, "where": "bool[2,4]"},
         ulp=16, label="where", transforms=("eager", "jit", "grad")),
    case("scipy.special.logsumexp", "f64[3]", x64=True, ulp=16, transforms=("eager", "grad")),
    case("scipy.special.softmax", "f32[2,4]", transforms=FULL, ulp=16),
    case("scipy.special.log_softmax", "f32[2,4]", kwargs={"axis": 0}, transforms=FULL, ulp=16))

# ---------------------------------------------------------------- jax.random

RANDOM = [
    ("PRNGKey", [7], {}, (), BASIC), ("PRNGKey", ["i32[]"], {}, (), NOGRAD),
    ("split", ["key[2]"], {}, (), NOGRAD), ("split", ["key[2]", 3], {}, (1,), NOGRAD),
    ("split", ["key[2]", (2, 2)], {}, (), BASIC),
    ("fold_in", ["key[2]", 5], {}, (), NOGRAD), ("fold_in", ["key[2]", "i32[]"], {}, (), NOGRAD),
    ("bits", ["key[2]", (3,)], {}, (), NOGRAD),
    ("bits", ["key[2]", (2,)], {"dtype": "uint8"}, (), BASIC),
    ("normal", ["key[2]", (2, 3)], {}, (), NOGRAD), ("normal", ["key[2]"], {}, (), BASIC),
    ("normal", ["key[2]", (3,)], {"dtype": "float16"}, (), BASIC),
    ("normal", ["key[2]", (3,)], {"dtype": "int32"}, (), ("eager",)),
    ("uniform", ["key[2]", (2, 3)], {}, (), NOGRAD),
    ("uniform", ["key[2]", (4,)], {"minval": -2.0, "maxval": 3.0}, (), BASIC),
    ("uniform", ["key[2]", (3,)], {"minval": "f32[3]", "maxval": 5.0}, (), NOGRAD),
    ("bernoulli", ["key[2]"], {}, (), BASIC),
    ("bernoulli", ["key[2]", 0.3, (5,)], {}, (2,), NOGRAD),
    ("bernoulli", ["key[2]", "f32[4]:prob"], {}, (), NOGRAD),
    ("categorical", ["key[2]", "f32[2,4]"], {}, (), NOGRAD),
    ("categorical", ["key[2]", "f32[4]"], {"shape": (3,)}, (), BASIC),
    ("categorical", ["key[2]", "f32[4,2]"], {"axis": 0}, (), BASIC),
    ("randint", ["key[2]", (5,), 0, 10], {}, (1, 2, 3), NOGRAD),
    ("randint", ["key[2]", (4,), -3, "i32[]:pos"], {}, (1, 2), NOGRAD),
    ("randint", ["key[2]", (3,), 0, 300], {"dtype": "uint8"}, (1, 2, 3), BASIC),
    ("permutation", ["key[2]", 5], {}, (1,), NOGRAD),
    ("permutation", ["key[2]", "f32[4,2]"], {}, (), NOGRAD),
    ("permutation", ["key[2]", "f32[2,3]"], {"axis": 1, "independent": True}, (), BASIC),
    ("choice", ["key[2]", 5, (3,)], {"replace": False}, (1,), BASIC),
    ("choice", ["key[2]", "f32[4]", (2,)], {}, (), NOGRAD),
    ("choice", ["key[2]", 4, (3,)], {"p": "f32[4]:prob"}, (1,), BASIC),
    ("gumbel", ["key[2]", (3,)], {}, (), NOGRAD), ("exponential", ["key[2]", (3,)], {}, (),
                                                    NOGRAD),
    ("laplace", ["key[2]", (3,)], {}, (), NOGRAD), ("logistic", ["key[2]", (3,)], {}, (), NOGRAD),
    ("truncated_normal", ["key[2]", -1.0, 2.0, (3,)], {}, (1, 2), NOGRAD),
    ("truncated_normal", ["key[2]", "f32[3]:unit", 1.5], {}, (), BASIC),
    ("key_data", ["key[2]"], {}, (), NOGRAD),
    ("normal", ["key[2]", (3,)], {"dtype": "float64"}, (), BASIC),
]
for _fn, _args, _kw, _st, _tr in RANDOM:
    for _part in (False, True):
        add(case("random." + _fn, *_args, kwargs=_kw, static=_st, transforms=_tr,
                 partitionable=_part, ulp=4 if _fn in ("bits", "split", "fold_in", "randint",
                                                       "permutation", "choice", "PRNGKey",
                                                       "key_data", "bernoulli") else 64,
                 label="_".join(_short(a) for a in _args[1:]) + "_" + "_".join(
                     f"{k}" for k in _kw) + ("_part" if _part else "")))
add(case("random.normal", "key[2]", (2, 2), static=(1,), x64=True, kwargs={"dtype": "float64"},
         transforms=BASIC, ulp=64, label="x64"),
    case("random.uniform", "key[2]", (3,), static=(1,), x64=True, ulp=4, transforms=BASIC,
         label="x64_default"))

# ---------------------------------------------------------------- skipped names

SKIP_REASONS = {
    "numpy": {
        **{n: "dtype object, not a function" for n in (
            "bool_", "complex128", "complex64", "complexfloating", "dtype", "float_", "float64",
            "floating", "inexact", "int16", "int64", "int_", "integer", "number",
            "signedinteger", "uint16", "uint32", "uint64", "unsignedinteger", "ndarray")},
        "issubsctype": "deprecated NumPy alias (removed from jax.numpy)",
    },
    "lax": {
        **{n: "submodule, not a function" for n in (
            "control_flow", "elementwise", "indexing", "prng", "reductions", "sorting",
            "structural", "windowed")},
        **{n: "a class (its instances are tested as arguments of gather/scatter/conv)"
           for n in ("ConvDimensionNumbers", "GatherDimensionNumbers", "GatherScatterMode",
                     "ScatterDimensionNumbers")},
        "threefry2x32": "covered bit-exactly by tests/golden/random.npz (test_random.py)",
        "Precision": "an enum; its values are validated by dot_general (test_line_programs)",
        **{n: "a collective: needs a named axis; compared with JAX under vmap(axis_name=) in "
              "line_programs.collectives" for n in (
            "psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
            "ppermute", "pshuffle", "pswapaxes", "axis_index", "axis_size")},
        "reduce_window_sum": "corejax helper (jax.lax has no public reduce_window_sum)",
        "reduce_window_max": "corejax helper (jax.lax has no public reduce_window_max)",
        "reduce_window_min": "corejax helper (jax.lax has no public reduce_window_min)",
    },
    "nn": {"functions": "submodule", "initializers": "submodule (tested in test_nn.py)"},
    "random": {
        **{n: "imported helper module or object, not a jax.random function" for n in (
            "annotations", "config", "dtypes", "get_aval", "jit", "jnp", "lax", "math", "np",
            "operator", "partial", "register_pytree_node", "threefry2x32_p", "warnings",
            "PRNGKeyArray")},
        "shuffle": "deprecated in JAX (use permutation)",
        "wrap_key_data": "typed keys: tested in test_random.py",
    },
    "scipy.special": {
        n: "imported helper, not a jax.scipy.special function" for n in (
            "annotations", "canonicalize_axes", "custom_jvp", "get_aval", "jnp", "lax",
            "promote_dtypes_inexact")},
}


# ---------------------------------------------------------------- cases of other areas

# Each cases_<area>.py next to this file (linear algebra, special functions, ...) imports this
# module, appends its module paths to MODULES, calls `add(...)` and may extend SKIP_REASONS.
# Loaded last and in name order, so that case ids and the golden order are stable.
for _path in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "cases_*.py"))):
    importlib.import_module(os.path.basename(_path)[:-3])

"""Eager elementwise ops and reductions on 1M float32 (and a few int32 ops), one op at a time as
a notebook runs them: corejax against JAX's eager ops, run in a subprocess with the python named
by --jax-python or $JAX_PYTHON (default /work/jaxvenv/bin/python; the project never imports
JAX). Prints a table of medians (us) and the ratio corejax / JAX; asserts nothing.

    python bench/bench_eager_ops.py [--repeats 15] [--turn 3] [--pause 0]
                                    [--only hypot,clip,...] [--jax-python PY] [--load [N]]

The goal (issue #32) is a ratio of at most 1.0 on every row. The machine is shared and its load
drifts from second to second: both sides run as persistent worker processes that take turns of
`turn` timed calls of an op (who goes first alternating, `pause` seconds between turns)
until each made `repeats`, and each keeps the median, so a ratio compares times from the same
seconds; rerun rows that look off with --only.
The SPECIAL rows are every elementwise function of jax.scipy.special, and jax.nn's, on operands
in their domains (expi on positive ones: JAX's expi of a mixed-sign float32 array took 26 s on
16K elements here, 100 ms on 1K; hyp2f1, exp1 and expn take JAX 1-18 s a call on 1M).
The rows named *_16 are not on 1M elements but on 16 float32 (add1_16: `x + 1.0`; div2_16,
mul_16, sub_row_16: a 4x4 less its first row, mean_16, softmax_16 over rows of 4x4, relu_16),
where an op's dispatch overhead is all there is to time. --load [N] runs N busy-looping
processes (bench/_load.py) beside both sides, to see how each slows down when another process
competes for the cores.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _openblas  # noqa: E402,F401  (before NumPy: see bench/_openblas.py)
import numpy as np

import _load  # noqa: E402

UNARY = ["exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "cbrt", "abs", "negative", "sign",
         "floor", "ceil", "round", "log1p", "expm1", "arcsin", "arctan", "sinh", "cosh",
         "arcsinh", "exp2", "log2", "log10", "reciprocal", "square", "rint", "trunc", "isnan",
         "isfinite", "logical_not", "deg2rad", "sinc", "signbit", "positive"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "arctan2",
          "hypot", "mod", "fmod", "greater", "less_equal", "equal", "logaddexp", "copysign",
          "true_divide", "floor_divide", "nextafter", "heaviside"]
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "all",
              "any", "cumsum", "sort", "median", "nansum", "logsumexp"]
# jax.scipy.special and jax.nn functions, each on operands in its domain (u: (0.05, 0.95),
# g: (0.5, 5.5), n: standard normal)
SPECIAL = ["erf", "erfc", "erfinv", "ndtr", "ndtri", "log_ndtr", "gammaln", "digamma", "i0e",
           "i1e", "expit", "logit", "xlogy", "sigmoid", "gelu", "softplus", "log_sigmoid"]
# the rest of jax.scipy.special's elementwise functions: name -> its operands (letters as in
# `cases`; a number is a Python scalar operand), on 1M float32 (wofz: complex64)
SPECIAL_ARGS = {
    "beta": "gh", "betaln": "gh", "betainc": "ghu", "gamma": "g", "gammasgn": "z",
    "loggamma": "g", "gammainc": "gh", "gammaincc": "gh", "poch": "gh", "factorial": "g",
    "comb": "kg", "multigammaln": ("k", 3), "polygamma": (1, "g"), "zeta": "sg",
    "dawsn": "z", "erfcx": "z", "fresnel": "z", "owens_t": "zu", "entr": "u",
    "kl_div": "uv", "rel_entr": "uv", "xlog1py": "gu", "boxcox": "gu", "boxcox1p": "uu",
    "i0": "z", "i1": "z", "exp1": "g", "expi": "g", "expn": (2, "g"), "spence": "g",
    "sici": "z", "hyp1f1": "uhz", "hyp2f1": "ugsu", "wofz": "c",
}
SPECIAL += list(SPECIAL_ARGS)
OTHER = ["int_add", "int_floor_divide", "int_mod", "where", "clip", "astype_f16", "x*2+1",
         "add1_16", "div2_16", "mul_16", "sub_row_16", "mean_16", "softmax_16", "relu_16"]
ALL = UNARY + BINARY + REDUCTIONS + SPECIAL + OTHER


def cases(jax, jnp, special):
    """name -> thunk over 1M-element operands, for either framework."""
    rng = np.random.default_rng(0)
    n = 1 << 20
    x = jnp.asarray(rng.random(n, dtype=np.float32) + np.float32(0.1))
    y = jnp.asarray(rng.random(n, dtype=np.float32) + np.float32(0.2))
    i = jnp.asarray(rng.integers(1, 100, n).astype(np.int32))
    x16, y16, x44 = x[:16], y[:16], x[:16].reshape(4, 4)
    u = jnp.asarray(rng.random(n, dtype=np.float32) * np.float32(0.9) + np.float32(0.05))
    g = jnp.asarray(rng.random(n, dtype=np.float32) * np.float32(5) + np.float32(0.5))
    z = jnp.asarray(rng.standard_normal(n, dtype=np.float32))
    domain = {"erfinv": u, "ndtri": u, "logit": u, "gammaln": g, "digamma": g, "i0e": g,
              "i1e": g}
    h = jnp.asarray(rng.random(n, dtype=np.float32) * np.float32(5) + np.float32(0.5))
    operands = {"z": z, "u": u, "g": g, "h": h, "v": jnp.asarray(
        rng.random(n, dtype=np.float32) * np.float32(0.9) + np.float32(0.05)),
        "s": g + 1.0, "k": g + 2.0,
        "c": jnp.asarray((rng.standard_normal(n) + 1j * rng.standard_normal(n))
                         .astype(np.complex64))}
    out = {}
    for name in SPECIAL:
        f = getattr(jax.nn if name in ("sigmoid", "gelu", "softplus", "log_sigmoid")
                    else special, name)
        if name == "xlogy":
            args = (g, u)
        elif name in SPECIAL_ARGS:
            args = tuple(operands[a] if isinstance(a, str) else a
                         for a in SPECIAL_ARGS[name])
        else:
            args = (domain.get(name, z),)
        out[name] = (lambda f, args: lambda: f(*args))(f, args)
    for u in UNARY:
        out[u] = (lambda f: lambda: f(x))(getattr(jnp, u))
    for b in BINARY:
        out[b] = (lambda f: lambda: f(x, y))(getattr(jnp, b))
    for r in REDUCTIONS:
        f = special.logsumexp if r == "logsumexp" else getattr(jnp, r)
        out[r] = (lambda f: lambda: f(x))(f)
    out.update({
        "int_add": lambda: i + i, "int_floor_divide": lambda: i // 7, "int_mod": lambda: i % 7,
        "where": lambda: jnp.where(x > 0.5, x, y), "clip": lambda: jnp.clip(x, 0.2, 0.8),
        "astype_f16": lambda: x.astype(jnp.float16), "x*2+1": lambda: x * 2 + 1,
        "add1_16": lambda: x16 + 1.0,
        # dispatch rows on 16 floats: a scalar divisor, two arrays, a broadcast, a reduction,
        # a composed function of a model
        "div2_16": lambda: x16 / 2.0, "mul_16": lambda: x16 * y16,
        "sub_row_16": lambda: x44 - x44[:1], "mean_16": lambda: jnp.mean(x16),
        "softmax_16": lambda: jax.nn.softmax(x44), "relu_16": lambda: jax.nn.relu(x16),
    })
    return out


def _frameworks(which):
    if which == "jax":
        import jax
        import jax.numpy as jnp
        import jax.scipy.special as special
    else:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import corejax as jax
        import corejax.numpy as jnp
        import corejax.scipy.special as special
    return jax, jnp, special


def worker(which):
    """One framework's process: answers each 'NAME K' line from stdin with the times (seconds,
    a JSON list) of K calls of the op; an op's first request first calls it once untimed
    (compiles / loads kernels, warms caches). Protocol lines go to a private copy of stdout;
    the process's own stdout goes to stderr, so that nothing a library prints mixes in."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    jax, jnp, special = _frameworks(which)
    thunks = cases(jax, jnp, special)
    warm = set()
    proto.write("ready\n")
    for line in sys.stdin:
        name, k = line.split()
        f = thunks[name]
        if name not in warm:
            jax.block_until_ready(f())
            warm.add(name)
        times = []
        for _ in range(int(k)):
            t = time.perf_counter()
            jax.block_until_ready(f())   # fresnel and sici return pairs
            times.append(time.perf_counter() - t)
        proto.write(json.dumps(times) + "\n")


class Side:
    """The driver's handle on one framework's worker process."""

    def __init__(self, which, python):
        self.which = which
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--side", which],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, JAX_PLATFORMS="cpu"))
        self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:                    # the worker died: its stderr says why
            raise RuntimeError(f"{self.which} worker exited ({self.proc.wait()}):\n"
                               + self.proc.stderr.read()[-2000:])
        return json.loads(line) if line.strip() != "ready" else None

    def times(self, name, k):
        self.proc.stdin.write(f"{name} {k}\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        _load.end_worker(self.proc)     # the worker's loop over stdin ends


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="timed calls per op and side")
    ap.add_argument("--turn", type=int, default=3, help="timed calls per turn")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds between turns (XLA's idle threads spin a while after its "
                         "turn; but this VM's cores also slow down when idle: a pause of 50 ms "
                         "made every op's next calls 1.5-2x slower on both sides)")
    ap.add_argument("--only", default="", help="comma-separated op names (default: all)")
    ap.add_argument("--jax-python", default=os.environ.get("JAX_PYTHON",
                                                           "/work/jaxvenv/bin/python"))
    ap.add_argument("--side", choices=["corejax", "jax"], help=argparse.SUPPRESS)
    _load.add_load_argument(ap, "both sides")
    args = ap.parse_args()
    if args.side:       # a worker
        worker(args.side)
        return
    names = [s for s in args.only.split(",") if s] or ALL
    unknown = sorted(set(names) - set(ALL))
    if unknown:
        ap.error(f"unknown ops {unknown}; known: {', '.join(ALL)}")
    print(_load.describe(args.load))
    with _load.busy(args.load):
        theirs, ours = measure(args, names)
    print(f"1-min load average after: {_load.load_average():.2f}")
    report(names, ours, theirs)


def measure(args, names):
    """Medians (us) of JAX's (in its own interpreter; {} without it) and corejax's calls of
    each op: the two workers take turns of `turn` calls, the first to go alternating, until
    each has made `repeats` calls, so that both sides' times come from the same seconds."""
    sides = {"corejax": Side("corejax", sys.executable)}
    if os.path.exists(args.jax_python):
        try:
            sides["jax"] = Side("jax", args.jax_python)
        except RuntimeError as e:
            print(f"jax side failed: {e}", file=sys.stderr)
    else:
        print(f"jax: {args.jax_python} not found (set --jax-python / JAX_PYTHON); no ratios")
    out = {s: {} for s in ("corejax", "jax")}
    try:
        for name in names:
            times = {s: [] for s in sides}
            order = list(sides)
            for r, done in enumerate(range(0, args.repeats, args.turn)):
                k = min(args.turn, args.repeats - done)
                for s in (order if r % 2 == 0 else order[::-1]):
                    time.sleep(args.pause)
                    times[s] += sides[s].times(name, k)
            for s, t in times.items():
                out[s][name] = float(np.median(t) * 1e6)
    finally:
        for side in sides.values():
            side.close()
    return out["jax"], out["corejax"]


def report(names, ours, theirs):
    print(f"{'op (1M float32)':18s} {'corejax us':>11s} {'jax us':>9s} {'ratio':>7s}")
    over = 0
    for name in names:
        j = theirs.get(name)
        ratio = ours[name] / j if j else float("nan")
        over += ratio > 1.0
        print(f"{name:18s} {ours[name]:11.1f} {j if j else float('nan'):9.1f} {ratio:7.2f}")
    if theirs:
        print(f"{over} of {len(names)} ops above 1.0x JAX")


if __name__ == "__main__":
    main()

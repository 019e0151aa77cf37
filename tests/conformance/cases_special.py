"""Conformance cases of the special functions: lax's special-function primitives,
jax.scipy.special and jax.scipy.stats (loaded by cases.py after its own cases)."""
import numpy as np

import cases
from cases import BASIC, FULL, NOGRAD, add, case, unary

# ---------------------------------------------------------------- lax special functions

for _fn, _dom, _ulp in [("digamma", "pos", 32), ("bessel_i0e", "real", 16),
                        ("bessel_i1e", "real", 16)]:
    unary("lax." + _fn, _dom, ulp=_ulp, ints=False, variants=3,
          extra=[case("lax." + _fn, "i32[3]", label="int_error", transforms=("eager",))])
add(case("lax.digamma", "f32[2,3]:nz", label="negative", ulp=64),
    case("lax.digamma", "f32[7]:special", label="special", transforms=BASIC, ulp=16),
    case("lax.bessel_i0e", "f32[7]:special", label="special", transforms=BASIC),
    case("lax.bessel_i1e", "f32[7]:special", label="special", transforms=BASIC),
    case("lax.lgamma", "f32[7]:special", label="special", transforms=BASIC),
    case("lax.lgamma", "f32[2,3]:nz", label="negative", transforms=FULL, ulp=32))

for _fn, _tr in [("igamma", FULL), ("igammac", FULL), ("igamma_grad_a", NOGRAD)]:
    add(case("lax." + _fn, "f32[2,3]:pos", "f32[2,3]:pos", transforms=_tr, ulp=64),
        case("lax." + _fn, "f32[3]:gt1", 0.5, label="weak_x", ulp=64),
        case("lax." + _fn, 1.5, "f32[4]:pos", label="weak_a", ulp=64,
             transforms=("eager", "jit", "vmap", "grad") if _tr is FULL else NOGRAD),
        case("lax." + _fn, "f32[7]:special", "f32[7]:special", label="special",
             transforms=BASIC),
        case("lax." + _fn, "f64[4]:pos", "f64[4]:gt1", x64=True, ulp=64,
             transforms=("eager", "jit", "grad") if _tr is FULL else BASIC),
        case("lax." + _fn, "f32[3]", "f16[3]", label="mixed_error", transforms=("eager",)),
        case("lax." + _fn, "f32[3]:pos", "f32[2]:pos", label="shape_error",
             transforms=("eager",)),
        case("lax." + _fn, "i32[3]:pos", "i32[3]:pos", label="int_error", transforms=("eager",)))
add(case("lax.random_gamma_grad", "f32[2,3]:pos", "f32[2,3]:pos", ulp=64),
    case("lax.random_gamma_grad", "f32[3]:gt1", "f32[3]:prob", label="small_x", ulp=64),
    case("lax.random_gamma_grad", "f64[4]:pos", "f64[4]:gt1", x64=True, ulp=64,
         transforms=BASIC),
    case("lax.polygamma", 1.0, "f32[2,3]:pos", ulp=64, transforms=FULL),
    case("lax.polygamma", 2.0, "f32[4]:nz", label="negative_x", ulp=256),
    case("lax.polygamma", 0.0, "f32[3]:pos", label="digamma", ulp=32,
         transforms=("eager", "jit", "grad")),
    case("lax.polygamma", "f32[3]:pos", "f32[3]:pos", label="grad_m_error",
         transforms=("grad",)),
    case("lax.polygamma", 3.0, "f64[4]:pos", x64=True, label="f64", ulp=64,
         transforms=("eager", "jit", "grad")),
    case("lax.zeta", "f32[2,3]:gt1", "f32[2,3]:pos", ulp=64),
    case("lax.zeta", 3.0, "f32[4]:pos", label="weak_x", ulp=64),
    case("lax.zeta", "f32[7]:special", "f32[7]:special", label="special", transforms=BASIC),
    case("lax.zeta", "f64[3]:gt1", "f64[3]:pos", x64=True, ulp=64, transforms=BASIC),
    case("lax.betainc", "f32[2,3]:pos", "f32[2,3]:pos", "f32[2,3]:prob", ulp=64),
    case("lax.betainc", 1.5, 2.5, "f32[4]:prob", label="grad_x", ulp=64, transforms=FULL),
    case("lax.betainc", "f32[3]:pos", "f32[3]:pos", "f32[3]:prob", label="grad_ab_error",
         transforms=("grad",)),
    case("lax.betainc", "f32[7]:special", "f32[7]:special", "f32[7]:special",
         label="special", transforms=BASIC),
    case("lax.betainc", "f64[3]:gt1", "f64[3]:pos", "f64[3]:prob", x64=True, ulp=64,
         transforms=BASIC),
    case("lax.betainc", 1.0, 2.0, 0.5, label="weak", transforms=BASIC))

# ---------------------------------------------------------------- jax.scipy.special

# Inputs outside the spec domains: f(x + shift, ...) (written with operators only).
cases.ARRAY_OPS["special_shift"] = lambda f, x, *a, shift, **kw: f(x + shift, *a, **kw)
NOHVP = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "jit_grad")
SP = "scipy.special."

for _fn, _dom, _ulp in [
        ("digamma", "pos", 32), ("gamma", "pos", 64), ("gammasgn", "wide", 1),
        ("loggamma", "pos", 256), ("ndtr", "real", 16), ("ndtri", "prob", 32),
        ("log_ndtr", "real", 32), ("erfcx", "real", 32), ("dawsn", "real", 32),
        ("entr", "pos", 16), ("i0", "real", 16), ("i0e", "real", 16), ("i1", "real", 16),
        ("i1e", "real", 16), ("exp1", "pos", 32), ("expi", "nz", 64), ("spence", "prob", 32),
        ("factorial", "pos", 64), ("fresnel", "real", 32), ("sici", "nz", 32)]:
    unary(SP + _fn, _dom, ulp=_ulp, variants=3)
for _fn in ("digamma", "gamma", "gammasgn", "loggamma", "ndtr", "ndtri", "log_ndtr", "erfcx",
            "dawsn", "entr", "i0", "i0e", "i1", "i1e", "exp1", "expi", "spence", "factorial",
            "fresnel", "sici", "gammaln"):
    add(case(SP + _fn, "f32[7]:special", label="special", transforms=BASIC, ulp=64))
add(case(SP + "gamma", "f32[2,3]:nz", label="negative", ulp=64, transforms=FULL),
    case(SP + "digamma", "f32[2,3]:nz", label="negative", ulp=64, transforms=FULL),
    case(SP + "log_ndtr", "f32[4]:real", kwargs={"series_order": 5}, label="order5", ulp=32),
    case(SP + "log_ndtr", "f32[4]:real", kwargs={"series_order": -1}, label="order_error",
         transforms=("eager",)),
    case(SP + "log_ndtr", "f32[4]:real", kwargs={"series_order": 31}, label="order_error2",
         transforms=("eager",)),
    case(SP + "ndtri", "f64[4]:prob", x64=True, label="f64", ulp=32, transforms=FULL),
    case(SP + "ndtr", "f64[4]:real", x64=True, label="f64", ulp=32, transforms=FULL),
    case(SP + "factorial", 4, 1, static=(1,), label="exact_error", transforms=("eager",)),
    case(SP + "bernoulli", 6, static=(0,), transforms=("eager",)),
    case(SP + "multigammaln", "f32[2,3]:gt1", 2, static=(1,), ulp=32, transforms=FULL),
    case(SP + "multigammaln", 2.5, 3, static=(1,), label="weak", ulp=32, transforms=BASIC))

for _fn, _doms, _tr, _ulp in [
        ("gammainc", ("pos", "pos"), FULL, 64), ("gammaincc", ("pos", "pos"), FULL, 64),
        ("beta", ("pos", "pos"), FULL, 64), ("betaln", ("pos", "pos"), FULL, 64),
        ("poch", ("pos", "pos"), FULL, 64), ("kl_div", ("pos", "pos"), FULL, 16),
        ("rel_entr", ("pos", "pos"), FULL, 16), ("boxcox", ("pos", "real"), FULL, 32),
        ("boxcox1p", ("pos", "real"), FULL, 32), ("comb", ("gt1", "prob"), FULL, 64),
        ("zeta", ("gt1", "pos"), NOHVP, 64), ("owens_t", ("real", "pos"), FULL, 32)]:
    _a, _b = (f":{d}" if d != "real" else "" for d in _doms)
    add(case(SP + _fn, f"f32[2,3]{_a}", f"f32[3]{_b}", transforms=_tr, ulp=_ulp),
        case(SP + _fn, f"f32[4]{_a}", 1.5, label="weak_b", ulp=_ulp),
        case(SP + _fn, 2.0, f"f32[4]{_b}", label="weak_a", ulp=_ulp),
        case(SP + _fn, 2.0, 0.5, label="scalars", ulp=_ulp, transforms=BASIC),
        case(SP + _fn, f"i32[3]:pos", f"i32[3]:pos", label="int", ulp=_ulp),
        case(SP + _fn, f"f16[3]{_a}", f"f16[3]{_b}", label="f16", ulp=_ulp),
        case(SP + _fn, f"f64[3]{_a}", f"f64[3]{_b}", x64=True, label="f64", ulp=_ulp,
             transforms=("eager", "jit", "grad")),
        case(SP + _fn, "f32[7]:special", "f32[7]:special", label="special", ulp=_ulp,
             transforms=BASIC))
add(case(SP + "comb", "f32[3]:gt1", "f32[3]:prob", kwargs={"repetition": True},
         label="repetition", ulp=64, transforms=FULL),
    case(SP + "zeta", "f32[3]:gt1", label="riemann_error", transforms=("eager",)),
    case(SP + "polygamma", 1, "f32[2,3]:pos", ulp=64, transforms=FULL),
    case(SP + "polygamma", "i32[3]:idx4", "f32[3]:pos", label="int_n", ulp=64,
         transforms=NOGRAD),
    case(SP + "polygamma", 2, 0.5, label="scalars", ulp=64, transforms=BASIC),
    case(SP + "polygamma", 1.0, "f32[3]:pos", label="float_n_error", transforms=("eager",)),
    case(SP + "polygamma", 1, "f16[3]:pos", label="f16", ulp=64),
    case(SP + "expn", 2.0, "f32[2,3]:pos", static=(0,), ulp=64, transforms=NOHVP),
    case(SP + "expn", "i32[7]:idx4", "f32[7]:pos", label="n_array", ulp=64),
    case(SP + "expn", 0.0, "f32[3]:pos", static=(0,), label="n0", ulp=64,
         transforms=("eager", "jit", "grad")),
    case(SP + "betainc", "f32[2,3]:pos", "f32[3]:pos", "f32[3]:prob", ulp=64,
         transforms=("eager", "jit", "vmap", "grad")),
    case(SP + "betainc", 1.5, 2.5, "f32[2,3]:prob", label="grad_x", ulp=64, transforms=FULL),
    case(SP + "betainc", 1, 2, "f32[3]:prob", label="int_ab", ulp=64),
    case(SP + "betainc", "f64[3]:pos", "f64[3]:gt1", "f64[3]:prob", label="f64", x64=True,
         ulp=64, transforms=BASIC),
    case(SP + "hyp1f1", "f32[2,3]:pos", "f32[3]:gt1", "f32[3]:unit", ulp=64),
    case(SP + "hyp1f1", 0.5, 1.5, "f32[2,3]:unit", label="grad_x", ulp=64, transforms=NOHVP),
    case(SP + "hyp2f1", "f32[2,3]:pos", "f32[3]:pos", "f32[3]:gt1", "f32[3]:unit", ulp=64),
    case(SP + "hyp2f1", 0.5, 1.0, 2.5, "f32[2,3]:unit", label="grad_x", ulp=64,
         transforms=NOHVP),
    case("array.special_shift", cases.Ref(SP + "bessel_jn"), "f32[4]:gt1",
         kwargs={"shift": 4.0, "v": 3}, label="bessel_jn", ulp=256),
    case("array.special_shift", cases.Ref(SP + "bessel_jn"), "f32[2,3]:gt1",
         kwargs={"shift": 6.0, "v": 1, "n_iter": 60}, label="bessel_jn_niter", ulp=256))

# Where JAX 0.10.2 itself is wrong, the case is left out (corejax's values and derivatives are
# checked against SciPy and finite differences in tests/test_special.py instead):
#  - bessel_jn: nan for |z| below ~4 in float32, and derivatives that are not J_n' (the
#    recurrence is differentiated as computed): only values, at z in [5.2, 9];
#  - expi of float16: nan; exp1's second derivative: a TypeError; spence's derivative: nan for
#    1 < x < 2 (spence runs on (0.1, 0.9)); expn of a non-integer n: a value on some branches,
#    nan on others (n runs over integers);
#  - owens_t of float16: computed in float16 and returned as float32 (a float16-sized budget).
_DROP = {"scipy.special.expi/f164"}
cases.CASES[:] = [c for c in cases.CASES if c["id"] not in _DROP]
for _c in cases.CASES:
    if _c["id"] == "scipy.special.exp1/f322x3":
        _c["transforms"] = NOHVP
    if _c["id"] == "scipy.special.owens_t/f16":
        _c["ulp"] = 4096

# ---------------------------------------------------------------- jax.scipy.stats

_DISTRIBUTIONS = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet",
                  "expon", "gamma", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace",
                  "logistic", "multinomial", "multivariate_normal", "nbinom", "norm", "pareto",
                  "poisson", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy"]
cases.MODULES.extend(["scipy.stats"] + ["scipy.stats." + d for d in _DISTRIBUTIONS])
ST = "scipy.stats."


def _spec(dom, shape):
    return f"f32[{shape}]" + (f":{dom}" if dom != "real" else "")


def continuous(dist, fns, doms, ulp=32, quantiles=(), diff=FULL):
    """Cases for each function of `dist` over its arguments' domains `doms` (x first; loc and
    scale last where the distribution has them): all arguments as broadcasting arrays, the
    required arguments only (defaults) and special x; for the first function also Python
    scalars, integers and float64."""
    for i, fn in enumerate(fns):
        quantile = fn in quantiles
        first = "prob" if quantile else doms[0]
        shapes = ["2,3"] + ["3"] * (len(doms) - 1)
        full = [_spec(first, shapes[0])] + [_spec(d, s) for d, s in zip(doms[1:], shapes[1:])]
        name = ST + dist + "." + fn
        required = len(doms) - 2 if doms[-2:] == _LOC_SCALE else len(doms)
        required = [_spec(d, "4") for d in doms[1:required]]
        add(case(name, *full, transforms=diff if i == 0 else ("eager", "jit", "vmap", "grad"),
                 ulp=ulp),
            case(name, _spec(first, "4"), *required, label="defaults", ulp=ulp,
                 transforms=("eager", "jit", "grad")),
            case(name, "f32[7]:special", *[r.replace("[4]", "[7]") for r in required],
                 label="special", ulp=ulp, transforms=BASIC))
        if i:
            continue
        add(case(name, 0.5 if quantile else 0.7, *[1.5] * len(required), label="scalars",
                 ulp=ulp, transforms=BASIC),
            case(name, "i32[4]:pos", *required, label="int_x", ulp=ulp),
            case(name, "f64[3]" + ("" if first == "real" else f":{first}"),
                 *[r.replace("f32[4]", "f64[3]") for r in required], label="f64", x64=True,
                 ulp=ulp, transforms=("eager", "jit", "grad")))


_LOC_SCALE = ("real", "pos")
continuous("norm", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"],
           ("real",) + _LOC_SCALE, quantiles=("ppf", "isf"))
continuous("expon", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"],
           ("pos",) + _LOC_SCALE, quantiles=("ppf",))
continuous("gamma", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"],
           ("pos", "pos") + _LOC_SCALE, ulp=64)
continuous("chi2", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"],
           ("pos", "gt1") + _LOC_SCALE, ulp=64)
continuous("beta", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"],
           ("prob", "pos", "pos") + _LOC_SCALE, ulp=64)
continuous("t", ["logpdf", "pdf"], ("real", "gt1") + _LOC_SCALE)
continuous("cauchy", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"],
           ("real",) + _LOC_SCALE, quantiles=("ppf", "isf"))
continuous("laplace", ["logpdf", "pdf", "cdf"], ("real",) + _LOC_SCALE)
continuous("logistic", ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"], ("real",) + _LOC_SCALE,
           quantiles=("ppf", "isf"))
continuous("uniform", ["logpdf", "pdf", "cdf", "ppf"], ("prob", "unit", "pos"),
           quantiles=("ppf",))
continuous("pareto", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"],
           ("gt1", "pos", "unit", "pos"), quantiles=("ppf",))
continuous("gumbel_r", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"],
           ("real",) + _LOC_SCALE, quantiles=("ppf",))
continuous("gumbel_l", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"],
           ("real",) + _LOC_SCALE, quantiles=("ppf",))
continuous("gennorm", ["logpdf", "pdf", "cdf"], ("real", "gt1"), ulp=64)
continuous("vonmises", ["logpdf", "pdf"], ("real", "pos"))
continuous("wrapcauchy", ["logpdf", "pdf"], ("pos", "prob"))

for _fn in ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]:
    for _a, _b, _lbl in [(-1.5, 1.5, "centre"), (0.5, 3.0, "upper"), (-4.0, -1.0, "lower")]:
        add(case(ST + "truncnorm." + _fn, "f32[2,3]", _a, _b, label=_lbl, ulp=256,
                 transforms=NOHVP))
    add(case(ST + "truncnorm." + _fn, "f32[4]", "f32[4]:nz", 2.0, "f32[4]", "f32[4]:pos",
             label="arrays", ulp=256, transforms=NOGRAD))

for _fn in ("logpmf", "pmf"):
    add(case(ST + "bernoulli." + _fn, "i32[2,3]:idx2", "f32[3]:prob", transforms=NOHVP,
             ulp=32),
        case(ST + "bernoulli." + _fn, "f32[7]:wide", "f32[7]:prob", 1.0, label="loc",
             ulp=32),
        case(ST + "binom." + _fn, "i32[2,3]:idx5", 4.0, "f32[3]:prob", ulp=64,
             transforms=NOHVP),
        case(ST + "binom." + _fn, "f32[7]:wide", "f32[7]:gt1", "f32[7]:prob", 0.5,
             label="loc", ulp=64),
        case(ST + "nbinom." + _fn, "i32[2,3]:idx5", "f32[3]:pos", "f32[3]:prob", ulp=64,
             transforms=NOHVP),
        case(ST + "nbinom." + _fn, "f32[7]:wide", 3.0, 0.4, 1.0, label="loc", ulp=64),
        case(ST + "geom." + _fn, "i32[2,3]:idx5", "f32[3]:prob", ulp=32, transforms=NOHVP),
        case(ST + "geom." + _fn, "f32[7]:wide", 0.3, -1.0, label="loc", ulp=32),
        case(ST + "poisson." + _fn, "i32[2,3]:idx5", "f32[3]:pos", ulp=64, transforms=NOHVP),
        case(ST + "poisson." + _fn, "f32[7]:wide", "f32[7]:pos", 1.0, label="loc", ulp=64),
        case(ST + "betabinom." + _fn, "i32[2,3]:idx5", 4.0, "f32[3]:pos", "f32[3]:pos",
             ulp=64, transforms=NOHVP),
        case(ST + "betabinom." + _fn, "f32[7]:wide", 3.0, 1.5, 2.5, 0.5, label="loc",
             ulp=64))
add(case(ST + "bernoulli.cdf", "f32[7]:wide", "f32[7]:prob", ulp=8),
    case(ST + "bernoulli.ppf", "f32[7]:unit", 0.4, ulp=8),
    case(ST + "bernoulli.ppf", "f32[7]:special", 0.4, label="special", ulp=8),
    case(ST + "poisson.cdf", "i32[2,3]:idx5", "f32[3]:pos", ulp=64, transforms=NOHVP),
    case(ST + "poisson.cdf", "f32[7]:wide", "f32[7]:pos", 0.5, label="loc", ulp=64),
    case(ST + "poisson.entropy", "f32[2,3]:pos", ulp=256, transforms=NOHVP),
    case(ST + "poisson.entropy", "f32[4]:gt1", 1.0, label="loc", ulp=256),
    case(ST + "poisson.entropy", "f32[7]:special", label="special", ulp=256,
         transforms=BASIC))

# Framework-neutral wrappers (operators and methods only) that make inputs valid: counts and
# their total, points on the simplex, a positive definite covariance, a kernel density
# estimate built and queried inside the function.
cases.ARRAY_OPS.update({
    "stats_multinomial": lambda f, x, p: f(x, x.sum(), p / p.sum(axis=-1, keepdims=True)),
    "stats_simplex": lambda f, x, alpha, fewer=False: f(
        x / (x.sum(axis=0) + (1.0 if fewer else 0.0)), alpha),
    "stats_mvn": lambda f, x, mean, c: f(x, mean, c @ c.T / c.shape[-1]
                                         + np.eye(c.shape[-1], dtype=c.dtype)),
    "stats_kde": lambda cls, data, points, method="evaluate", bw_method=None, weights=None:
        getattr(cls(data, bw_method=bw_method, weights=weights), method)(points),
    "stats_kde_box": lambda cls, data, low, high: cls(data).integrate_box_1d(low, high),
    "stats_kde_gaussian": lambda cls, data, mean, c: cls(data).integrate_gaussian(
        mean, c @ c.T + np.eye(c.shape[-1], dtype=c.dtype)),
    "stats_kde_kde": lambda cls, data, other: cls(data).integrate_kde(cls(other)),
})
for _fn in ("logpmf", "pmf"):
    add(case("array.stats_multinomial", cases.Ref(ST + "multinomial." + _fn), "i32[3]:idx4",
             "f32[3]:pos", label=_fn, ulp=64, transforms=NOHVP),
        case("array.stats_multinomial", cases.Ref(ST + "multinomial." + _fn), "i32[2,3]:idx4",
             "f32[3]:pos", label=_fn + "_batch", ulp=64))
add(case(ST + "multinomial.logpmf", "f32[3]:pos", 3.0, "f32[3]:prob", label="float_error",
         transforms=("eager",)))
for _fn in ("logpdf", "pdf"):
    add(case("array.stats_simplex", cases.Ref(ST + "dirichlet." + _fn), "f32[3]:pos",
             "f32[3]:pos", label=_fn, ulp=64, transforms=NOHVP),
        case("array.stats_simplex", cases.Ref(ST + "dirichlet." + _fn), "f32[3,2]:pos",
             "f32[3]:gt1", label=_fn + "_batch", ulp=64),
        case("array.stats_simplex", cases.Ref(ST + "dirichlet." + _fn), "f32[2]:pos",
             "f32[3]:pos", kwargs={"fewer": True}, label=_fn + "_implied", ulp=64),
        case(ST + "dirichlet." + _fn, "f32[3]:pos", "f32[3]:pos", label="off_simplex",
             transforms=BASIC),
        case(ST + "dirichlet." + _fn, "f32[4]:prob", "f32[2]:pos", label="shape_error",
             transforms=("eager",)),
        case("array.stats_mvn", cases.Ref(ST + "multivariate_normal." + _fn), "f32[3]",
             "f32[3]", "f32[3,3]", label=_fn, ulp=256, transforms=NOHVP),
        case("array.stats_mvn", cases.Ref(ST + "multivariate_normal." + _fn), "f32[4,2]",
             "f32[2]", "f32[2,2]", label=_fn + "_batch", ulp=256),
        case(ST + "multivariate_normal." + _fn, "f32[4,2]", "f32[2]", 1.5, label="scalar_cov",
             ulp=64, transforms=("eager", "jit", "vmap", "grad")),
        case(ST + "multivariate_normal." + _fn, "f32[4]", 0.5, "f32[4]:pos", label="univariate",
             ulp=64),
        case(ST + "multivariate_normal." + _fn, "f32[2]", "f32[2]", "f32[2]:pos",
             label="vector_cov_error", transforms=("eager",)))
add(case(ST + "multivariate_normal.logpdf", "f32[2]", "f32[2]", 1.0,
         kwargs={"allow_singular": True}, label="allow_singular", transforms=("eager",)))

add(case(ST + "mode", "i32[6,3]:idx3"),
    case(ST + "mode", "f32[5,3]:wide", kwargs={"axis": 1, "keepdims": True}, label="axis1"),
    case(ST + "mode", "i32[2,5]:idx3", kwargs={"axis": None}, label="flat"),
    case(ST + "mode", "f32[7]:special", label="special"),
    case(ST + "mode", "f32[0]", label="empty", transforms=BASIC),
    case(ST + "mode", "f32[4]", kwargs={"nan_policy": "omit"}, label="omit",
         transforms=("eager",)),
    case(ST + "mode", "f32[4]", kwargs={"nan_policy": "bad"}, label="bad_policy",
         transforms=("eager",)),
    case(ST + "rankdata", "f32[2,5]:wide", transforms=NOGRAD),
    case(ST + "rankdata", "f32[7]:special", label="special"))
for _m in ("average", "min", "max", "dense", "ordinal"):
    add(case(ST + "rankdata", "i32[8]:idx3", kwargs={"method": _m}, label=_m),
        case(ST + "rankdata", "f32[3,5]:wide", kwargs={"method": _m, "axis": 1},
             label=_m + "_axis1"))
add(case(ST + "rankdata", "f32[4]", kwargs={"method": "bad"}, label="bad_method",
         transforms=("eager",)),
    case(ST + "sem", "f32[5,3]", transforms=FULL, ulp=16),
    case(ST + "sem", "f32[2,5]", kwargs={"axis": 1, "ddof": 0, "keepdims": True},
         label="axis1", ulp=16, transforms=FULL),
    case(ST + "sem", "f32[3,4]", kwargs={"axis": None}, label="flat", ulp=16),
    case(ST + "sem", "i32[6]", label="int", ulp=16),
    case(ST + "sem", "f32[7]:special", kwargs={"nan_policy": "omit"}, label="omit", ulp=16,
         transforms=BASIC),
    case(ST + "sem", "f32[4]", kwargs={"nan_policy": "raise"}, label="raise",
         transforms=("eager",)))

_KDE = cases.Ref(ST + "gaussian_kde")
add(case("array.stats_kde", _KDE, "f32[6]", "f32[3]", label="kde_1d", ulp=64,
         transforms=NOHVP),
    case("array.stats_kde", _KDE, "f32[2,6]", "f32[2,3]", kwargs={"method": "logpdf"},
         label="kde_2d_logpdf", ulp=64, transforms=NOHVP),
    case("array.stats_kde", _KDE, "f32[6]", "f32[3]",
         kwargs={"bw_method": "silverman", "weights": "f32[6]:pos"}, label="kde_silverman",
         ulp=64),
    case("array.stats_kde", _KDE, "f32[6]", "f32[3]", kwargs={"bw_method": 0.4,
                                                             "method": "pdf"},
         label="kde_scalar_bw", ulp=64),
    case("array.stats_kde", _KDE, "f32[6]", "f32[3]", kwargs={"bw_method": "bad"},
         label="kde_bad_bw", transforms=("eager",)),
    case("array.stats_kde", _KDE, "f32[1]", "f32[3]", label="kde_one_point",
         transforms=("eager",)),
    case("array.stats_kde_box", _KDE, "f32[6]", "f32[]", "f32[]:pos", label="kde_box",
         ulp=64, transforms=NOHVP),
    case("array.stats_kde_gaussian", _KDE, "f32[2,6]", "f32[2]", "f32[2,2]",
         label="kde_gaussian", ulp=64, transforms=NOHVP),
    case("array.stats_kde_kde", _KDE, "f32[6]", "f32[5]", label="kde_kde", ulp=64,
         transforms=NOHVP))

SKIP_REASONS = cases.SKIP_REASONS
SKIP_REASONS["lax"] = {**SKIP_REASONS.get("lax", {}),
                       "special": "submodule (its functions are covered by name)"}
SKIP_REASONS["scipy.special"] = {
    **SKIP_REASONS.get("scipy.special", {}),
    "bessel_jn": "covered through array.special_shift (JAX is nan below |z| ~ 4)",
}
SKIP_REASONS["scipy.stats"] = {
    **{d: "a distribution module (its functions are covered by name)" for d in _DISTRIBUTIONS},
    "gaussian_kde": "a class: covered through array.stats_kde* (resample draws differ from "
                    "JAX's, which does not document its sampling order; tested in test_stats)",
    "ModeResult": "the NamedTuple mode returns",
}
SKIP_REASONS["scipy.stats.multinomial"] = {
    n: "covered through array.stats_multinomial" for n in ("logpmf", "pmf")}
SKIP_REASONS["scipy.stats.dirichlet"] = {
    n: "covered through array.stats_simplex (and directly off the simplex)" for n in (
        "logpdf", "pdf")}

# ---------------------------------------------------------------- complex-valued special
# functions: wofz and sph_harm_y (derivatives through cases_complex's "cplx" for wofz's complex
# input, and through "complex_parts", the real and imaginary parts of a complex result).

cases.ARRAY_OPS["complex_parts"] = lambda f, *a, **kw: (lambda out: (out.real, out.imag))(
    f(*a, **kw))
add(case(SP + "wofz", "c64[2,3]", ulp=32),
    case(SP + "wofz", "c64[4]:wide", label="wide", ulp=64),
    case(SP + "wofz", "c64[7]:special", label="special", transforms=BASIC, ulp=64),
    case(SP + "wofz", "f32[5]", label="real", ulp=32),
    case(SP + "wofz", "i32[4]", label="int", ulp=32),
    case(SP + "wofz", "f16[4]", label="f16", transforms=BASIC, ulp=32),
    case(SP + "wofz", 1.5, label="weak", transforms=BASIC, ulp=32),
    case(SP + "wofz", "c128[5]", label="c128", x64=True, transforms=BASIC, ulp=64),
    case("array.cplx", "f32[2,3]", "f32[2,3]", cases.Ref(SP + "wofz"), label="d_wofz",
         transforms=FULL, ulp=64),
    case("array.cplx", "f32[4]:wide", "f32[4]:wide", cases.Ref(SP + "wofz"),
         label="d_wofz_wide", transforms=NOHVP, ulp=64))

_SPH = cases.Ref(SP + "sph_harm_y")
add(case(SP + "sph_harm_y", "i32[6]:idx5", "i32[6]:idxm3", "f32[6]:pos", "f32[6]:pos",
         kwargs={"n_max": 4}, ulp=64),
    case(SP + "sph_harm_y", "i32[6]:idx5", "i32[6]:idxm3", "f32[6]:pos", "f32[6]:pos",
         label="default_n_max", ulp=64),
    case(SP + "sph_harm_y", "i32[6]:idx5", "i32[6]:idxm3", "f32[6]:pos", "f32[6]:pos",
         kwargs={"n_max": 2}, label="clipped", ulp=64),
    case(SP + "sph_harm_y", "i32[4]:idx4", "i32[4]:idxm2", 0.7, 1.3, kwargs={"n_max": 3},
         label="scalar_angles", ulp=64),
    case(SP + "sph_harm_y", "i32[5]:idx8", "i32[5]:idxm3", "f64[5]:pos", "f64[5]:pos",
         kwargs={"n_max": 7}, label="f64", x64=True, transforms=BASIC, ulp=64),
    case(SP + "sph_harm_y", "i32[5]:idx8", "i32[5]:idxm3", "i32[5]:pos", "f32[5]:pos",
         kwargs={"n_max": 7}, label="int_theta", transforms=BASIC, ulp=64),
    case("array.complex_parts", _SPH, "i32[6]:idx5", "i32[6]:idxm3", "f32[6]:pos",
         "f32[6]:pos", kwargs={"n_max": 4}, label="d_sph_harm_y", transforms=FULL, ulp=64),
    case(SP + "sph_harm_y", "i32[3]:idx3", "i32[3]", "f32[3]:pos", "f32[3]:pos",
         kwargs={"diff_n": 1}, label="diff_n_error", transforms=("eager",)),
    case(SP + "sph_harm_y", "f32[3]:pos", "i32[3]", "f32[3]:pos", "f32[3]:pos",
         label="float_n_error", transforms=("eager",)),
    case(SP + "sph_harm_y", "i32[3]:idx3", "i32[3]", "f16[3]:pos", "f16[3]:pos",
         kwargs={"n_max": 2}, label="f16_error", transforms=("eager",)),
    case(SP + "sph_harm_y", 3, 1, "f32[3]:pos", "f32[3]:pos", kwargs={"n_max": 3},
         label="scalar_n_error", transforms=("eager",)))

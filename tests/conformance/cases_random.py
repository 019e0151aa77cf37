"""Conformance cases for the rest of jax.random: the Gamma family (gamma, loggamma, beta,
dirichlet, t, chisquare, f, generalized_normal, ball) with derivatives in their parameters, the
counting distributions (poisson, binomial, multinomial, geometric, rademacher), the other
transforms (cauchy, lognormal, pareto, rayleigh, wald, weibull_min, maxwell,
double_sided_maxwell, triangular), multivariate_normal (cholesky / eigh / svd), orthogonal, and
details of the basic samplers (gumbel's 'highest' mode, choice / permutation /
bits / split edge cases, clone, key_impl). Complex normals are checked against JAX's values in
test_random_distributions.py (corejax.numpy cannot split complex arrays into parts yet).

Every case runs with both jax_threefry_partitionable settings ("_part" labels: True). Keys are
legacy uint32 keys ("key[2]"); under vmap every case maps over a batch of keys (and over its
parameters, with random in_axes). Float samples get 64 ulp of the leaf's scale: their last
bits come from log / erf_inv / lgamma implementations that differ between XLA and corejax, as
they differ between JAX's own backends.

Small wrappers (registered in cases.ARRAY_OPS, framework-neutral):
  random_scaled   f(key, x * scale, *rest): parameters outside the spec domains (Poisson rates
                  and binomial counts above the rejection samplers' thresholds, tiny shapes)
  random_mvn      f(key, mean, x @ x.mT / n + I, ...): a positive definite covariance
"""
import numpy as np

import cases
from cases import BASIC, FULL, NOGRAD, SKIP_REASONS, Call, Ref, add, case

FIRST = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "jit_grad")   # no second order
GRAD = ("eager", "jit", "vmap", "grad")


def _spd(x):
    return x @ x.mT / x.shape[-1] + np.eye(x.shape[-1], dtype=x.dtype)


cases.ARRAY_OPS.update({
    "random_scaled": lambda f, key, x, scale, *a, **kw: f(key, x * scale, *a, **kw),
    "random_mvn": lambda f, key, mean, x, *a, **kw: f(key, mean, _spd(x), *a, **kw),
})


def rcase(fn, *args, label, kwargs=None, static=(), transforms=NOGRAD, ulp=64, x64=False):
    """One case of random.<fn>(key, *args) per partitionable setting; `static` counts args
    after the key."""
    for part in (False, True):
        add(case("random." + fn, "key[2]", *args, kwargs=kwargs,
                 static=tuple(i + 1 for i in static), transforms=transforms, ulp=ulp, x64=x64,
                 partitionable=part, label=label + ("_part" if part else "")))


def wcase(op, fn, *args, label, kwargs=None, transforms=NOGRAD, ulp=64, x64=False):
    """A wrapped case: array.<op>(Ref(random.<fn>), key, *args)."""
    for part in (False, True):
        add(case("array." + op, Ref("random." + fn), "key[2]", *args, kwargs=kwargs,
                 transforms=transforms, ulp=ulp, x64=x64, partitionable=part,
                 label=f"{fn}_{label}" + ("_part" if part else "")))


# --- the Gamma family -----------------------------------------------------------------------------

rcase("gamma", "f32[3]:pos", label="a3", transforms=FIRST)
rcase("gamma", "f32[2]:pos", kwargs={"shape": (3, 2)}, label="shape", transforms=GRAD)
rcase("gamma", 0.3, kwargs={"shape": (4,)}, label="scalar_small")
rcase("gamma", "f32[3]:pos", kwargs={"dtype": "float16"}, label="f16", transforms=BASIC)
rcase("gamma", "f64[3]:pos", kwargs={"dtype": "float64"}, label="x64", x64=True,
      transforms=("eager", "jit", "grad"))
rcase("gamma", "f32[3]:pos", kwargs={"dtype": "int32"}, label="int_dtype", transforms=("eager",))
rcase("gamma", "f32[2]:pos", kwargs={"shape": (3,)}, label="bad_shape", transforms=("eager",))
wcase("random_scaled", "gamma", "f32[3]:pos", 30.0, label="large", transforms=GRAD)
rcase("gamma", "f32[3]:pos", label="hvp", transforms=("hvp",))
rcase("loggamma", "f32[3]:pos", label="a3", transforms=FIRST)
wcase("random_scaled", "loggamma", "f32[4]:pos", 0.01, label="tiny", transforms=GRAD)
rcase("loggamma", 0.5, kwargs={"shape": (2, 2)}, label="scalar")
rcase("beta", "f32[3]:pos", "f32[3]:pos", label="ab", transforms=FIRST)
rcase("beta", 2.0, "f32[2]:pos", kwargs={"shape": (3, 2)}, label="shape", transforms=GRAD)
rcase("beta", "f32[2]:pos", "f32[3]:pos", label="bad_shapes", transforms=("eager",))
rcase("dirichlet", "f32[4]:pos", label="alpha4", transforms=FIRST)
rcase("dirichlet", "f32[2,3]:pos", label="batch", transforms=GRAD)
rcase("dirichlet", "f32[3]:pos", kwargs={"shape": (2,)}, label="shape")
wcase("random_scaled", "dirichlet", "f32[3]:pos", 0.02, label="tiny")
rcase("dirichlet", "f32[]:pos", label="scalar_alpha", transforms=("eager",))
rcase("t", "f32[3]:gt1", label="df3", transforms=FIRST)
rcase("t", 5.0, kwargs={"shape": (4,)}, label="scalar")
rcase("chisquare", "f32[3]:gt1", label="df3", transforms=FIRST)
rcase("chisquare", 3.0, kwargs={"shape": (2, 2)}, label="scalar")
rcase("f", "f32[3]:gt1", "f32[3]:gt1", label="dfs", transforms=FIRST)
rcase("f", 4.0, 6.0, kwargs={"shape": (3,)}, label="scalar")
rcase("generalized_normal", 1.5, (4,), label="p15")
rcase("generalized_normal", "f32[]:gt1", (3,), label="traced_p",
      transforms=("eager", "jit", "grad", "jvp"))
rcase("generalized_normal", 1.0, (2, 2), kwargs={"dtype": "int32"}, label="int_dtype",
      transforms=("eager",))
rcase("ball", 3, kwargs={"shape": (2,)}, static=(0,), label="d3")
rcase("ball", 2, 1.5, (3,), static=(0,), label="p15")
rcase("ball", 4, 1, static=(0,), label="l1")

# --- counting distributions --------------------------------------------------------------------

rcase("poisson", "f32[4]:pos", label="knuth")
rcase("poisson", 3.0, (5,), label="scalar")
wcase("random_scaled", "poisson", "f32[4]:pos", 20.0, label="rejection")
wcase("random_scaled", "poisson", "f32[3]:pos", 0.0, label="zero_rate")
wcase("random_scaled", "poisson", "f32[2]:pos", 5000.0, label="huge_rate")
rcase("poisson", "f32[3]:pos", kwargs={"dtype": "int64"}, label="x64", x64=True,
      transforms=BASIC)
rcase("poisson", "f32[3]:pos", kwargs={"dtype": "uint8"}, label="uint8", transforms=BASIC)
rcase("poisson", 2.0, (3,), kwargs={"dtype": "float32"}, label="float_dtype",
      transforms=("eager",))
rcase("binomial", 10.0, "f32[4]:prob", label="inversion")
wcase("random_scaled", "binomial", "f32[4]:gt1", 50.0, "f32[4]:prob", label="btrs")
rcase("binomial", "f32[6]:special", 0.3, label="special_counts")
rcase("binomial", 20.0, "f32[5]:unit", label="negative_probs")
rcase("binomial", 7.5, 0.6, (4,), label="fractional_count")
rcase("binomial", 10.0, "f32[3]:prob", kwargs={"dtype": "float64"}, label="x64", x64=True,
      transforms=BASIC)
rcase("binomial", 10.0, 0.5, (2,), kwargs={"dtype": "int32"}, label="int_dtype",
      transforms=("eager",))
rcase("multinomial", 20.0, "f32[4]:prob", label="n20")
rcase("multinomial", "f32[2]:gt1", "f32[2,3]:prob", label="batch")
rcase("multinomial", 30.0, "f32[3]:prob", kwargs={"shape": (2, 3), "dtype": "int32"},
      label="shape_int")
wcase("random_scaled", "multinomial", "f32[3]:gt1", 100.0, "f32[3]:prob", label="large_n")
rcase("geometric", "f32[4]:prob", label="p4")
rcase("geometric", 0.3, (5,), label="scalar")
rcase("geometric", 0.3, (2,), kwargs={"dtype": "float32"}, label="float_dtype",
      transforms=("eager",))
rcase("rademacher", (5,), label="int")
rcase("rademacher", (2, 3), kwargs={"dtype": "float32"}, label="float")

# --- transforms of normal / uniform / exponential draws ----------------------------------------------

rcase("cauchy", (5,), label="s5")
rcase("cauchy", (3,), kwargs={"dtype": "float64"}, label="x64", x64=True, transforms=BASIC)
rcase("lognormal", "f32[3]:pos", label="sigma", transforms=FULL)
rcase("lognormal", kwargs={"shape": (4,)}, label="default_sigma")
rcase("pareto", "f32[3]:gt1", label="b", transforms=FULL)
rcase("pareto", 2.0, (4,), label="scalar")
rcase("rayleigh", "f32[3]:pos", label="scale", transforms=FULL)
rcase("wald", "f32[3]:pos", label="mean", transforms=FULL)
rcase("weibull_min", "f32[3]:pos", "f32[3]:gt1", label="params", transforms=FULL)
rcase("weibull_min", 1.0, 2.0, (4,), label="scalar")
rcase("maxwell", (4,), label="s4")
rcase("double_sided_maxwell", "f32[3]", "f32[3]:pos", label="params", transforms=FULL)
rcase("double_sided_maxwell", 0.5, 2.0, (4,), label="scalar")
rcase("triangular", 0.0, "f32[3]:prob", 1.0, label="mode", transforms=FULL)
rcase("triangular", "f32[2]:unit", 1.0, 2.0, (3, 2), label="left")
rcase("triangular", 0.0, 0.5, 1.0, kwargs={"dtype": "int32"}, label="int_dtype",
      transforms=("eager",))
for _method in ("cholesky", "eigh", "svd"):
    wcase("random_mvn", "multivariate_normal", "f32[3]", "f32[3,3]",
          kwargs={"method": _method}, label=_method,
          transforms=FIRST if _method == "cholesky" else GRAD)
wcase("random_mvn", "multivariate_normal", "f32[2,3]", "f32[3,3]", kwargs={"shape": (4, 2)},
      label="batch_shape")
rcase("multivariate_normal", "f32[3]", "f32[2,2]", label="bad_cov", transforms=("eager",))
rcase("multivariate_normal", "f32[2]", "f32[2,2]", kwargs={"method": "qr"}, label="bad_method",
      transforms=("eager",))
rcase("orthogonal", 3, static=(0,), label="n3")
rcase("orthogonal", 2, (2,), static=(0,), kwargs={"m": 4}, label="wide")
rcase("orthogonal", 4, (), static=(0,), kwargs={"m": 2}, label="tall")

# --- details of the basic samplers and the key API ---------------------------------------------------

rcase("gumbel", (6,), kwargs={"mode": "highest"}, label="highest")
rcase("gumbel", (3,), kwargs={"mode": "highest", "dtype": "float64"}, label="highest_x64",
      x64=True, transforms=BASIC)
rcase("gumbel", (4,), kwargs={"mode": "high"}, label="high")
rcase("gumbel", (2,), kwargs={"mode": "bad"}, label="bad_mode", transforms=("eager",))
rcase("categorical", "f32[2,4]", kwargs={"mode": "highest"}, label="highest")
rcase("categorical", "f32[5]", kwargs={"shape": (3,), "replace": False}, label="no_replace")
rcase("choice", 5, 3, static=(0,), label="int_shape", transforms=("eager",))
rcase("choice", Call("numpy.asarray", 5), (2,), label="array0d")
rcase("choice", "f32[2,3]", (0,), kwargs={"axis": 1}, label="no_draws")
rcase("choice", "f32[2,3]", (2,), kwargs={"axis": 3}, label="bad_axis", transforms=("eager",))
rcase("choice", 5, (2,), static=(0,), kwargs={"mode": "bad"}, label="mode_unused")
rcase("choice", 6, (3,), static=(0,), kwargs={"p": "f32[6]:prob", "replace": False,
                                              "mode": "high"}, label="p_no_replace_high")
rcase("choice", 4, (3,), static=(0,), kwargs={"p": "i32[4]:pos"}, label="int_p")
rcase("permutation", Call("numpy.asarray", 4), label="array0d")
rcase("permutation", 4.0, static=(0,), label="float", transforms=("eager",))
rcase("permutation", "f32[4]", kwargs={"axis": 2}, label="bad_axis", transforms=("eager",))
rcase("bits", (5,), kwargs={"dtype": "uint16"}, label="u16")
rcase("bits", (3,), kwargs={"dtype": "uint64"}, label="u64", x64=True, transforms=BASIC)
rcase("split", (2, 0), label="empty", transforms=BASIC)
rcase("fold_in", 1.7, label="float_data")
rcase("clone", label="legacy")
rcase("key_impl", label="legacy", transforms=("eager",))
rcase("bernoulli", 0.5, (2,), kwargs={"mode": "highest"}, label="bad_mode",
      transforms=("eager",))

SKIP_REASONS["random"] = {
    **{n: "a class (typed key arrays and their dtype), tested in test_random_distributions.py"
       for n in ("PRNGKeyArray", "PRNGKeyDType")},
    "key_dtype": "returns a key dtype object (no array to compare); tested in "
                 "test_random_distributions.py",
    "wrap_key_data": "typed keys: tested in test_random.py and test_random_distributions.py",
    "key": "typed keys: tested in test_random.py and test_random_distributions.py",
    "random_gamma_p": "a primitive; covered through gamma / loggamma and bound directly in "
                      "test_random_distributions.py",
    "shuffle": "deprecated in JAX (use permutation)",
}

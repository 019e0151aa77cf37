"""Key-based pseudo-random numbers with JAX's API and JAX's exact bits (Threefry-2x32).

State is explicit: a key is a uint32 array of shape (2,) (`PRNGKey`, the legacy form) or a
typed key array (`key`); `split` and `fold_in` derive new keys, samplers consume one key. Every
sampler reproduces JAX's algorithm (how keys are split, the order of draws, the rejection loops,
the float arithmetic), so the same key, shape and dtype give JAX's samples, eagerly and under
jit and vmap, with either `threefry_partitionable` setting.

Modules: _keys (keys, the hash, split / fold_in, raw bits), _basic (uniform, normal, integers,
choices, permutations, one-uniform transforms), _gamma (random_gamma_p and the distributions
built on it), _discrete (poisson, binomial, multinomial, geometric), _continuous (the other
transforms, multivariate_normal, orthogonal). The checker behind the option debug_key_reuse
is corejax/_key_reuse.py, below lax, whose control flow reports to it.

The option enable_custom_prng makes `PRNGKey`, and `split` / `fold_in` of legacy uint32 keys,
return typed keys, as it does in JAX 0.10.2 (measured: tests/golden/gen_key_reuse.py); the
values are the same either way.
"""
from corejax.random._keys import (PRNGKey, PRNGKeyArray, PRNGKeyDType, clone, fold_in, key,
                                  key_data, key_dtype, key_impl, split, wrap_key_data,
                                  _hash_counts, _hash_iota)
from corejax.random._basic import (bernoulli, bits, categorical, choice, exponential, gumbel,
                                   laplace, logistic, normal, permutation, rademacher, randint,
                                   shuffle, truncated_normal, uniform)
from corejax.random._gamma import (ball, beta, chisquare, dirichlet, f, gamma,
                                   generalized_normal, loggamma, random_gamma_p, t)
from corejax.random._discrete import binomial, geometric, multinomial, poisson
from corejax.random._continuous import (cauchy, double_sided_maxwell, lognormal, maxwell,
                                        multivariate_normal, orthogonal, pareto, rayleigh,
                                        triangular, wald, weibull_min)

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "key_dtype", "clone",
    "PRNGKeyArray", "split", "fold_in", "bits", "uniform", "normal", "truncated_normal",
    "bernoulli", "rademacher", "randint", "choice", "permutation", "shuffle", "categorical",
    "gumbel", "exponential", "laplace", "logistic", "gamma", "loggamma", "random_gamma_p",
    "beta", "dirichlet", "t", "chisquare", "f", "generalized_normal", "ball", "poisson",
    "binomial", "multinomial", "geometric", "cauchy", "lognormal", "pareto", "rayleigh", "wald",
    "weibull_min", "maxwell", "double_sided_maxwell", "triangular", "multivariate_normal",
    "orthogonal",
]

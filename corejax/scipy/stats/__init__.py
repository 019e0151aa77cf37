"""corejax.scipy.stats: jax.scipy.stats's distributions, one module each, and its summary
statistics (mode, rankdata, sem) and gaussian_kde."""
from corejax.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy,
)
from corejax.scipy.stats._summary import mode, rankdata, sem  # noqa: F401
from corejax.scipy.stats._kde import gaussian_kde  # noqa: F401

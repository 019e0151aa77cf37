"""jax.scipy.stats.gaussian_kde: a Gaussian kernel density estimate, a pytree (it crosses jit
and vmap as its arrays)."""
from __future__ import annotations

import math

import numpy as np

from corejax.lax import linalg as lax_linalg
from corejax.numpy._core import promote_dtypes_inexact
from corejax.scipy import special
from corejax.tree_util import register_pytree_node_class
import corejax.numpy as jnp

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:
    """Kernel density estimation with Gaussian kernels of the data's (weighted) covariance
    times bandwidth factor^2, Scott's rule by default.

    dataset: (d, n) points (a 1-D array is n points in one dimension); bw_method: 'scott',
    'silverman', a scalar factor or a callable of the estimate; weights: n non-negative weights.
    """

    def __init__(self, dataset, bw_method=None, weights=None):
        (dataset,) = promote_dtypes_inexact(dataset)
        dataset = jnp.atleast_2d(dataset)
        d, n = dataset.shape
        if n <= 1:
            raise ValueError("`dataset` input should have multiple elements.")
        if weights is not None:
            (weights,) = promote_dtypes_inexact(weights)
            weights = jnp.atleast_1d(weights).astype(dataset.dtype)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1 or weights.shape[0] != n:
                raise ValueError("`weights` input should be one-dimensional and of the same "
                                 "length as `dataset`.")
        else:
            weights = jnp.full(n, 1.0 / n, dataset.dtype)
        neff = 1 / jnp.sum(weights ** 2)
        self.neff, self.dataset, self.weights = neff, dataset, weights
        if bw_method is None or bw_method == "scott":
            factor = jnp.power(neff, -1.0 / (d + 4))
        elif bw_method == "silverman":
            factor = jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif np.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a "
                             "callable.")
        centered = dataset - jnp.sum(dataset * weights, axis=1, keepdims=True)
        data_cov = (centered * weights) @ centered.T / (1 - jnp.sum(weights ** 2))
        data_cov = jnp.atleast_2d(data_cov)
        self.covariance = data_cov * factor ** 2
        self.inv_cov = jnp.linalg.inv(self.covariance)

    # --- pytree ----------------------------------------------------------------------------

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.neff, obj.dataset, obj.weights, obj.covariance, obj.inv_cov = children
        return obj

    def __repr__(self):
        return (f"gaussian_kde(neff={self.neff!r}, dataset={self.dataset!r}, "
                f"weights={self.weights!r}, covariance={self.covariance!r}, "
                f"inv_cov={self.inv_cov!r})")

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    # --- evaluation ------------------------------------------------------------------------

    def _points(self, points):
        (points,) = promote_dtypes_inexact(points)
        points = jnp.atleast_1d(points).astype(self.dataset.dtype)
        points = points.reshape(points.shape[0], -1) if points.ndim > 1 else points[None, :]
        if points.shape[0] != self.d:
            if points.size == self.d:
                points = points.reshape(self.d, 1)
            else:
                raise ValueError(f"points have dimension {points.shape[0]}, dataset has "
                                 f"dimension {self.d}")
        return points

    def _log_kernel_sums(self, points, cov):
        """log sum_i w_i N(points_j; data_i, cov) for each point j."""
        factor = lax_linalg.cholesky(cov)
        diff = self.dataset[:, :, None] - points[:, None, :]            # (d, n, m)
        flat = diff.reshape(self.d, -1)
        white = lax_linalg.triangular_solve(factor, flat, left_side=True, lower=True)
        energy = 0.5 * jnp.sum(white * white, axis=0).reshape(self.n, -1)
        log_norm = (jnp.sum(jnp.log(jnp.diagonal(factor)))
                    + 0.5 * self.d * math.log(2 * math.pi))
        return special.logsumexp(-energy, axis=0, b=self.weights[:, None]) - log_norm

    def evaluate(self, points):
        """The estimated density at `points` ((d, m), or m points when d == 1)."""
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate

    def pdf(self, x):
        return self.evaluate(x)

    def logpdf(self, x):
        return self._log_kernel_sums(self._points(x), self.covariance)

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the Gaussian N(mean, cov)."""
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean, self.dataset.dtype)))
        cov = jnp.atleast_2d(jnp.asarray(cov, self.dataset.dtype))
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        return jnp.exp(self._log_kernel_sums(mean[:, None], self.covariance + cov))[0]

    def integrate_box_1d(self, low, high):
        """The estimate's mass between `low` and `high` (one-dimensional estimates only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        std = jnp.sqrt(self.covariance[0, 0])
        data = self.dataset[0]
        upper = special.ndtr((jnp.asarray(high, data.dtype) - data) / std)
        lower = special.ndtr((jnp.asarray(low, data.dtype) - data) / std)
        return jnp.sum(self.weights * (upper - lower))

    def integrate_kde(self, other):
        """The integral of the product of this estimate and `other`."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        cov = self.covariance + other.covariance
        densities = jnp.exp(self._log_kernel_sums(other.dataset, cov))
        return jnp.sum(densities * other.weights)

    def resample(self, key, shape=()):
        """Draws from the estimate: a data point (chosen by weight) plus kernel noise, as a
        (d, *shape) array."""
        from corejax import random
        shape = tuple(shape)
        choice_key, noise_key = random.split(key)
        index = random.choice(choice_key, self.n, shape=shape, p=self.weights)
        noise = random.multivariate_normal(noise_key, jnp.zeros(self.d, self.dataset.dtype),
                                           self.covariance, shape=shape)
        return self.dataset[:, index] + jnp.moveaxis(noise, -1, 0)

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError("only 1D box integrations are supported; use "
                                  "integrate_box_1d")


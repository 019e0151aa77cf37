"""Scalar float64 algorithms of the special-function primitives (corejax/lax/special.py).

Every function here takes and returns floats and uses only `math`: each is
`njit(cache=True, error_model="numpy")`, so fused CPU kernels call it by name (generated kernels
import it, see `special._kernel_rule`), and `evaluate` runs the very same code over arrays as
the primitives' eager implementation. One algorithm per function: eager and compiled results
agree to within rounding (LLVM may vectorize the inlined copy's libm calls differently).
Narrower dtypes are computed in float64 and rounded once.

Special values (poles, infinities, out-of-domain arguments) follow what JAX 0.10.2's XLA
kernels return, which is not always SciPy's choice (digamma at a pole is nan, not -inf;
zeta(s, q) at a pole in q is +inf for even s and nan for odd s).

Algorithms (all textbook; none is a port of another library's source):
- digamma: upward recurrence to x >= 10, then the asymptotic (Stirling) series in 1/x^2 with
  Bernoulli-number coefficients; reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0.
- zeta (Hurwitz) and polygamma: direct sum to q + N >= 9, then Euler-Maclaurin with up to 13
  Bernoulli terms (differentiated term by term for d/ds zeta); psi^(n)(x) = (-1)^(n+1) n!
  zeta(n + 1, x).
- betaln: log Gamma sums, with Stirling's series and log1p taking the large terms apart
  where an argument is >= 10 (no cancellation between huge log Gammas).
- igamma family: the power series of P(a, x) below x = a + 1, else Legendre's continued
  fraction of Q(a, x), evaluated by Wallis' recurrences together with its derivative in `a`,
  which gives d/da P (igamma_grad_a) and random_gamma_grad = -(dP/da) / (dP/dx) without
  forming the density (no overflow for large arguments).
- betainc: the continued fraction of Abramowitz & Stegun 26.5.8 (modified Lentz), on the side
  of the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast.
- bessel_i0e / i1e: the power series of I0 / I1 (positive terms) up to |x| = 20, beyond it
  Hankel's asymptotic series (error below e^-40).
- erfcx: exp(x^2) erfc(x) with x^2 split exactly (Veltkamp) below 5, the Laplace continued
  fraction of erfc above; reflection erfcx(-x) = 2 exp(x^2) - erfcx(x).
- ndtri: Abramowitz & Stegun 26.2.23's rational start (error < 4.5e-4), then Newton steps on
  erf(x / sqrt 2) / 2 = p - 1/2 in the centre and on log Phi(x) = log p (through erfcx) in the
  tails, where a residual in p itself would underflow.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit

_jit = njit(cache=True, error_model="numpy", fastmath=False)

_EPS = 2.220446049250313e-16
_MAX_TERMS = 10000
_EULER_GAMMA = 0.5772156649015329
_INF = math.inf
_NAN = math.nan
_PI = math.pi
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _bernoulli_even(count):
    """B_2, B_4, ..., B_{2 count} as Fractions (Akiyama-Tanigawa)."""
    out, row = [], []
    for m in range(2 * count + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        if m >= 2 and m % 2 == 0:
            out.append(row[0])
    return out


_B2K = _bernoulli_even(13)
# psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k)
# (highest order first, for Horner's rule)
_DIGAMMA_ASYMPTOTIC = tuple(float(b / (2 * k)) for k, b in enumerate(_B2K[:8], start=1))[::-1]
# Euler-Maclaurin: B_2j / (2j)!
_EM = tuple(float(b / math.factorial(2 * j)) for j, b in enumerate(_B2K, start=1))


# zeta(k) for k = 2, 3, ... (for log Gamma(1 + a) near a = 0), from the kernel below
_ZETA_INT: tuple = ()


# --- gamma function family ---------------------------------------------------------------------

@_jit
def _digamma_positive(x):
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    series = 0.0
    for c in _DIGAMMA_ASYMPTOTIC:
        series = series * z + c
    return acc + math.log(x) - 0.5 / x - series * z


@_jit
def digamma(x):
    if math.isnan(x) or x == -_INF:
        return _NAN
    if x == _INF:
        return _INF
    if x <= 0.0:
        if x == math.floor(x):
            return _NAN
        # psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi, so reduce x to (-1/2, 1/2]
        r = x - math.floor(x)
        if r > 0.5:
            r -= 1.0
        return _digamma_positive(1.0 - x) - _PI / math.tan(_PI * r)
    return _digamma_positive(x)


@_jit
def _zeta_domain(s, q):
    """zeta's value where it is special (poles, nan, out of domain), else 0."""
    if s == 1.0:
        return _INF
    if math.isnan(s) or math.isnan(q):
        return _NAN
    if q <= 0.0 and q == math.floor(q):
        # a pole: +inf where every term near it is positive (even s), else no sign
        if s == math.floor(s) and s % 2.0 == 0.0:
            return _INF
        return _NAN
    if s < 1.0 or math.isinf(q) or math.isinf(s):
        return _NAN
    if q < 0.0 and s != math.floor(s):
        return _NAN
    return 0.0


@_jit
def _zeta_sum(s, q, with_ds):
    """(zeta(s, q), d/ds zeta(s, q) if with_ds else 0): direct terms up to w = q + N >= 9,
    then Euler-Maclaurin, T = w^(1-s)/(s-1) + w^-s/2 + sum_j B_2j/(2j)! (s)_(2j-1) w^(-s-2j+1),
    differentiated term by term."""
    total = 0.0
    ds = 0.0
    w = q
    n = 0
    while n < 9 or w < 9.0:
        term = w ** -s
        total += term
        if with_ds:
            ds -= math.log(w) * term
        w += 1.0
        n += 1
    wp = w ** -s
    log_w = math.log(w) if with_ds else 0.0
    tail = w * wp / (s - 1.0) + 0.5 * wp
    total += tail
    ds -= log_w * tail + w * wp / ((s - 1.0) * (s - 1.0))
    fac = s * wp / w
    rising = 1.0 / s          # d/ds log of the rising factorial in fac
    w2 = w * w
    for j in range(len(_EM)):
        term = fac * _EM[j]
        total += term
        ds += term * (rising - log_w)
        if abs(term) <= _EPS * abs(total):
            break
        fac *= (s + 2 * j + 1.0) * (s + 2 * j + 2.0) / w2
        rising += 1.0 / (s + 2 * j + 1.0) + 1.0 / (s + 2 * j + 2.0)
    return total, ds


@_jit
def zeta(s, q):
    """The Hurwitz zeta function sum_k (q + k)^-s."""
    special = _zeta_domain(s, q)
    if special != 0.0:
        return special
    return _zeta_sum(s, q, False)[0]


@_jit
def zeta_ds(s, q):
    """d/ds zeta(s, q) = -sum_k log(q + k) (q + k)^-s (nan for q < 0)."""
    special = _zeta_domain(s, q)
    if special != 0.0:
        return -_INF if s == 1.0 else _NAN
    if q < 0.0:
        return _NAN
    return _zeta_sum(s, q, True)[1]


@_jit
def polygamma(n, x):
    if math.isnan(n) or math.isnan(x) or n < 0.0 or n != math.floor(n):
        return _NAN
    if n == 0.0:
        return digamma(x)
    z = zeta(n + 1.0, x)
    sign = 1.0 if n % 2.0 == 1.0 else -1.0
    return sign * math.exp(math.lgamma(n + 1.0)) * z


@_jit
def _gamma_series(a, x, derivatives):
    """(S, G, H): P(a, x) = K S, dP/da = K G and d2P/da2 = K H, K = x^a e^-x / Gamma(a), where
    t_n = x^n / (a (a+1) ... (a+n)), S = sum_n t_n, G = sum_n t_n (log x - psi(a + n + 1)),
    H = sum_n t_n ((log x - psi(a + n + 1))^2 - psi'(a + n + 1)); G = H = 0 unless
    `derivatives` (their digamma and trigamma starts cost more than S itself). nan when the
    series has not converged in _MAX_TERMS terms (a beyond ~1e6 near x = a)."""
    t = 1.0 / a
    s = t
    log_x = psi = psi1 = g = h = 0.0
    if derivatives:
        log_x = math.log(x)
        psi = digamma(a + 1.0)
        psi1 = zeta(2.0, a + 1.0)
        g = t * (log_x - psi)
        h = t * ((log_x - psi) ** 2 - psi1)
    r = a
    for _ in range(_MAX_TERMS):
        r += 1.0
        t *= x / r
        s += t
        if not derivatives:
            if t <= _EPS * s:
                return s, 0.0, 0.0
            continue
        psi += 1.0 / r
        psi1 -= 1.0 / (r * r)
        dg = t * (log_x - psi)
        g += dg
        dh = t * ((log_x - psi) ** 2 - psi1)
        h += dh
        if t <= _EPS * s and abs(dg) <= _EPS * abs(g) and abs(dh) <= _EPS * (abs(h) + s):
            return s, g, h
    return _NAN, _NAN, _NAN


@_jit
def _gamma_fraction(a, x, derivatives):
    """(F, dF/da, d2F/da2) for Q(a, x) = K F, F = 1 / (x+1-a - 1(1-a) / (x+3-a - 2(2-a) / ...)),
    by Wallis' recurrences A_k = b_k A_k-1 + a_k A_k-2 (B alike), with `derivatives` carried
    with their first and second derivatives in `a` (db_k = -1, da_k = k; else those are 0 and
    F stops when it alone has converged), rescaled against overflow."""
    a_prev, a_cur = 1.0, x + 1.0 - a
    b_prev, b_cur = 0.0, 1.0
    da_prev, da_cur = 0.0, -1.0
    db_prev, db_cur = 0.0, 0.0
    d2a_prev, d2a_cur = 0.0, 0.0
    d2b_prev, d2b_cur = 0.0, 0.0
    f = b_cur / a_cur
    df = (db_cur - f * da_cur) / a_cur if derivatives else 0.0
    d2f = 0.0
    for k in range(1, _MAX_TERMS):
        ak = k * (a - k)
        bk = x + 2.0 * k + 1.0 - a
        if derivatives:
            da_new = -a_cur + bk * da_cur + k * a_prev + ak * da_prev
            db_new = -b_cur + bk * db_cur + k * b_prev + ak * db_prev
            d2a_new = -2.0 * da_cur + bk * d2a_cur + 2.0 * k * da_prev + ak * d2a_prev
            d2b_new = -2.0 * db_cur + bk * d2b_cur + 2.0 * k * db_prev + ak * d2b_prev
            da_prev, da_cur, db_prev, db_cur = da_cur, da_new, db_cur, db_new
            d2a_prev, d2a_cur, d2b_prev, d2b_cur = d2a_cur, d2a_new, d2b_cur, d2b_new
        a_new = bk * a_cur + ak * a_prev
        b_new = bk * b_cur + ak * b_prev
        a_prev, a_cur, b_prev, b_cur = a_cur, a_new, b_cur, b_new
        if abs(a_cur) > 1e100:
            a_prev *= 1e-100
            a_cur *= 1e-100
            b_prev *= 1e-100
            b_cur *= 1e-100
            if derivatives:
                da_prev *= 1e-100
                da_cur *= 1e-100
                db_prev *= 1e-100
                db_cur *= 1e-100
                d2a_prev *= 1e-100
                d2a_cur *= 1e-100
                d2b_prev *= 1e-100
                d2b_cur *= 1e-100
        if a_cur == 0.0:
            continue
        f_new = b_cur / a_cur
        if not derivatives:
            if abs(f_new - f) <= _EPS * abs(f_new):
                return f_new, 0.0, 0.0
            f = f_new
            continue
        df_new = (db_cur - f_new * da_cur) / a_cur
        d2f_new = (d2b_cur - 2.0 * df_new * da_cur - f_new * d2a_cur) / a_cur
        # (the second derivative settles at rounding noise a few ulps wide)
        done = (abs(f_new - f) <= _EPS * abs(f_new) and abs(df_new - df) <= _EPS * abs(df_new)
                and abs(d2f_new - d2f) <= 64 * _EPS * (abs(d2f_new) + abs(f_new)))
        f, df, d2f = f_new, df_new, d2f_new
        if done:
            return f, df, d2f
    return _NAN, _NAN, _NAN


@_jit
def _lgamma1p(a):
    """log Gamma(1 + a), accurate for small |a| (1 + a would round a away)."""
    if abs(a) >= 0.5:
        return math.lgamma(1.0 + a)
    # log Gamma(1 + a) = -gamma a + sum_k>=2 (-a)^k zeta(k) / k
    total = 0.0
    power = -a
    for k in range(2, len(_ZETA_INT) + 2):
        power *= -a
        term = power * _ZETA_INT[k - 2] / k
        total += term
        if abs(term) <= _EPS * abs(total):
            break
    return total - _EULER_GAMMA * a


@_jit
def _igammac_small_a(a, x):
    """Q(a, x) for a < 1, x < a + 1, where 1 - P(a, x) would cancel:
    Q = -expm1(a log x - log Gamma(1+a)) - x^a / Gamma(1+a) a sum_n>=1 (-x)^n / (n! (a+n))."""
    u = a * math.log(x) - _lgamma1p(a)
    total = 0.0
    term = 1.0
    for n in range(1, 60):
        term *= -x / n
        piece = term / (a + n)
        total += piece
        if abs(piece) <= _EPS * abs(total):
            break
    return -math.expm1(u) - math.exp(u) * a * total


@_jit
def _gamma_domain(a, x):
    """nan outside igamma's domain, else 0 (the caller goes on)."""
    if math.isnan(a) or math.isnan(x) or a < 0.0 or x < 0.0 or (a == 0.0 and x == 0.0):
        return _NAN
    return 0.0


@_jit
def _use_series(a, x):
    """The series below x = a + 1, the continued fraction above (where it converges in a few
    terms: near x = a it needs many, and its derivatives lose digits in them)."""
    return x < a + 1.0


@_jit
def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a))."""
    return a * math.log(x) - x - math.lgamma(a)


@_jit
def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    if math.isnan(_gamma_domain(a, x)):
        return _NAN
    if x == 0.0 or (math.isinf(a) and not math.isinf(x)):
        return 0.0
    if a == 0.0 or math.isinf(x):
        return 1.0
    if _use_series(a, x):
        s = _gamma_series(a, x, False)[0]
        return s * math.exp(_log_prefactor(a, x))
    f = _gamma_fraction(a, x, False)[0]
    return 1.0 - f * math.exp(_log_prefactor(a, x))


@_jit
def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    if math.isnan(_gamma_domain(a, x)):
        return _NAN
    if x == 0.0 or (math.isinf(a) and not math.isinf(x)):
        return 1.0
    if a == 0.0 or math.isinf(x):
        return 0.0
    if a < 1.0 and x < a + 1.0:
        return _igammac_small_a(a, x)
    if _use_series(a, x):
        s = _gamma_series(a, x, False)[0]
        return 1.0 - s * math.exp(_log_prefactor(a, x))
    f = _gamma_fraction(a, x, False)[0]
    return f * math.exp(_log_prefactor(a, x))


@_jit
def _gamma_a_derivative_ratio(a, x):
    """-(dP/da) / (dP/dx): how a Gamma(a) sample x moves with a (random_gamma_grad)."""
    if _use_series(a, x):
        return -x * _gamma_series(a, x, True)[1]
    f, df, _ = _gamma_fraction(a, x, True)
    return x * (f * (math.log(x) - digamma(a)) + df)


@_jit
def _gamma_derivative_domain(a, x):
    """0 at x = 0, nan outside the domain (and at a = 0 or inf, x = inf), else 1."""
    if math.isnan(_gamma_domain(a, x)):
        return _NAN
    if x == 0.0:
        return 0.0
    if a == 0.0 or math.isinf(a) or math.isinf(x):
        return _NAN
    return 1.0


@_jit
def igamma_grad_a(a, x):
    """d/da P(a, x)."""
    domain = _gamma_derivative_domain(a, x)
    if domain != 1.0:
        return domain
    log_density = (a - 1.0) * math.log(x) - x - math.lgamma(a)
    return -_gamma_a_derivative_ratio(a, x) * math.exp(log_density)


@_jit
def random_gamma_grad(a, x):
    """d sample / d alpha for a Gamma(alpha) sample x: -(dP/da) / (dP/dx)."""
    domain = _gamma_derivative_domain(a, x)
    if domain != 1.0:
        return domain
    return _gamma_a_derivative_ratio(a, x)


@_jit
def random_gamma_grad_da(a, x):
    """d/da random_gamma_grad(a, x) = -(d2P/da2) / (dP/dx) - random_gamma_grad (log x - psi(a))
    (d/da of dP/dx is dP/dx (log x - psi(a)))."""
    domain = _gamma_derivative_domain(a, x)
    if domain != 1.0:
        return domain
    log_x = math.log(x)
    ratio = _gamma_a_derivative_ratio(a, x)
    if _use_series(a, x):
        second = x * _gamma_series(a, x, True)[2]                  # d2P/da2 / (dP/dx)
    else:
        f, df, d2f = _gamma_fraction(a, x, True)
        lp = log_x - digamma(a)
        second = -x * (f * (lp * lp - zeta(2.0, a)) + 2.0 * df * lp + d2f)
    return -second - ratio * (log_x - digamma(a))


_ZETA_INT = tuple(zeta.py_func(float(k), 1.0) for k in range(2, 60))


# log Gamma(x) - Stirling's approximation, sum_k B_2k / (2k (2k-1) x^(2k-1)), for x >= 10
_STIRLING_CORRECTION = tuple(float(b / (2 * k * (2 * k - 1)))
                             for k, b in enumerate(_B2K[:8], start=1))[::-1]


@_jit
def _stirling_correction(x):
    z = 1.0 / (x * x)
    total = 0.0
    for c in _STIRLING_CORRECTION:
        total = total * z + c
    return total / x


@_jit
def betaln(a, b):
    """log B(a, b) = log Gamma(a) + log Gamma(b) - log Gamma(a + b), with the large terms
    cancelled analytically (Stirling) where an argument is >= 10."""
    if math.isnan(a) or math.isnan(b) or a < 0.0 or b < 0.0:
        return _NAN
    if math.isinf(a) or math.isinf(b):
        return _NAN
    if a == 0.0 or b == 0.0:
        return _NAN if a == b else _INF
    if a > b:
        a, b = b, a
    if b < 10.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    corr = _stirling_correction(b) - _stirling_correction(a + b)
    if a < 10.0:
        # log Gamma(b) - log Gamma(a + b) by Stirling
        return (math.lgamma(a) + corr - (b - 0.5) * math.log1p(a / b)
                - a * math.log(a + b) + a)
    corr += _stirling_correction(a)
    return (0.5 * math.log(2.0 * _PI) - 0.5 * math.log(b) - (a - 0.5) * math.log1p(b / a)
            - b * math.log1p(a / b) + corr)


# --- incomplete beta -----------------------------------------------------------------------------

@_jit
def _beta_fraction(a, b, x):
    tiny = 1e-300
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    if abs(d) < tiny:
        d = tiny
    d = 1.0 / d
    h = d
    for m in range(1, 10000):
        m2 = 2.0 * m
        num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2))
        d = 1.0 + num * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + num / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))
        d = 1.0 + num * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + num / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) <= _EPS:
            break
    return h


@_jit
def _betainc_direct(a, b, x):
    log_front = (a * math.log(x) + b * math.log1p(-x)
                 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    return math.exp(log_front) * _beta_fraction(a, b, x) / a


@_jit
def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if math.isnan(a) or math.isnan(b) or math.isnan(x):
        return _NAN
    if x < 0.0 or x > 1.0 or a < 0.0 or b < 0.0:
        return _NAN
    if (a == 0.0 and b == 0.0) or (math.isinf(a) and math.isinf(b)):
        return _NAN
    if x == 0.0 or x == 1.0:
        return x
    # the limits: all mass at 0 (a -> 0 or b -> inf) or at 1 (b -> 0 or a -> inf)
    if a == 0.0 or math.isinf(b):
        return 1.0
    if b == 0.0 or math.isinf(a):
        return 0.0
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _betainc_direct(b, a, 1.0 - x)
    return _betainc_direct(a, b, x)


# --- modified Bessel functions, exponentially scaled -----------------------------------------

@_jit
def _bessel_ie(order, x):
    """e^-|x| I_order(|x|) for order 0 or 1."""
    ax = abs(x)
    if ax <= 20.0:
        y = 0.25 * ax * ax
        term = 1.0
        total = 1.0
        k = 1
        while term > _EPS * total:
            term *= y / (k * (k + order))
            total += term
            k += 1
        if order == 1:
            total *= 0.5 * ax
        return total * math.exp(-ax)
    mu = 4.0 * order * order
    term = 1.0
    total = 1.0
    for k in range(1, 60):
        nxt = term * ((2 * k - 1.0) ** 2 - mu) / (8.0 * k * ax)
        if abs(nxt) > abs(term):
            break
        term = nxt
        total += term
        if abs(term) <= _EPS * abs(total):
            break
    return total / math.sqrt(2.0 * _PI * ax)


@_jit
def bessel_i0e(x):
    if math.isnan(x):
        return _NAN
    if math.isinf(x):
        return 0.0
    return _bessel_ie(0, x)


@_jit
def bessel_i1e(x):
    if math.isnan(x):
        return _NAN
    if math.isinf(x):
        return math.copysign(0.0, x)
    if x == 0.0:
        return x
    return math.copysign(_bessel_ie(1, x), x)


# --- error-function relatives --------------------------------------------------------------------

@_jit
def _exp_square(x):
    """exp(x * x) with the square split exactly into hi + lo (Veltkamp), so that the rounding
    of x * x is not magnified by the exponential."""
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    hi = x * x
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    return math.exp(hi) * (1.0 + lo)


@_jit
def _erfcx_nonnegative(x):
    if x < 5.0:
        return _exp_square(x) * math.erfc(x)
    if x > 1e8:
        return 1.0 / (math.sqrt(_PI) * x)
    f = x
    for k in range(60, 0, -1):
        f = x + (0.5 * k) / f
    return 1.0 / (math.sqrt(_PI) * f)


@_jit
def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    if math.isnan(x):
        return _NAN
    if x >= 0.0:
        return _erfcx_nonnegative(x)
    if x < -26.7:
        return _INF
    return 2.0 * _exp_square(x) - _erfcx_nonnegative(-x)


@_jit
def _log_ndtr(x):
    """log Phi(x), through erfcx so that the lower tail does not underflow."""
    z = -x / math.sqrt(2.0)
    if z < 0.0:
        return math.log1p(-0.5 * math.erfc(-z))
    return math.log(0.5 * erfcx(z)) - z * z


@_jit
def ndtri(p):
    """The standard normal quantile Phi^-1(p)."""
    if math.isnan(p) or p < 0.0 or p > 1.0:
        return _NAN
    if p == 0.0:
        return -_INF
    if p == 1.0:
        return _INF
    r = p if p <= 0.5 else 1.0 - p
    t = math.sqrt(-2.0 * math.log(r))
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    if p > 0.5:
        x = -x
    q = p - 0.5
    central = abs(q) <= 0.425
    log_r = math.log(r)
    for _ in range(8):
        density = math.exp(-0.5 * x * x) / math.sqrt(2.0 * _PI)
        if central:
            step = (0.5 * math.erf(x / math.sqrt(2.0)) - q) / density
        else:
            xt = x if p <= 0.5 else -x           # the lower-tail point
            log_phi = _log_ndtr(xt)
            # d log Phi / dx = density / Phi
            step = (log_phi - log_r) * math.exp(log_phi) / density
            if p > 0.5:
                step = -step
        x -= step
        if abs(step) <= 4.0 * _EPS * abs(x):
            break
    return x


# --- eager evaluation --------------------------------------------------------------------------

UNARY = ("digamma", "bessel_i0e", "bessel_i1e", "erfcx", "ndtri")
BINARY = ("zeta", "polygamma", "igamma", "igammac", "igamma_grad_a", "random_gamma_grad",
          "zeta_ds", "betaln", "random_gamma_grad_da")
TERNARY = ("betainc",)


@_jit
def _unary_loop(code, x, out):
    for i in range(x.size):
        v = x[i]
        if code == 0:
            out[i] = digamma(v)
        elif code == 1:
            out[i] = bessel_i0e(v)
        elif code == 2:
            out[i] = bessel_i1e(v)
        elif code == 3:
            out[i] = erfcx(v)
        else:
            out[i] = ndtri(v)


@_jit
def _binary_loop(code, x, y, out):
    for i in range(x.size):
        u, v = x[i], y[i]
        if code == 0:
            out[i] = zeta(u, v)
        elif code == 1:
            out[i] = polygamma(u, v)
        elif code == 2:
            out[i] = igamma(u, v)
        elif code == 3:
            out[i] = igammac(u, v)
        elif code == 4:
            out[i] = igamma_grad_a(u, v)
        elif code == 5:
            out[i] = random_gamma_grad(u, v)
        elif code == 6:
            out[i] = zeta_ds(u, v)
        elif code == 7:
            out[i] = betaln(u, v)
        else:
            out[i] = random_gamma_grad_da(u, v)


@_jit
def _ternary_loop(x, y, z, out):
    for i in range(x.size):
        out[i] = betainc(x[i], y[i], z[i])


def evaluate(name: str, *args: np.ndarray) -> np.ndarray:
    """Eager evaluation of kernel `name` over equal-shaped arrays: computed in float64 by the
    same compiled code the fused kernels inline, rounded once to the operands' dtype."""
    dtype = args[0].dtype
    flat = [np.ascontiguousarray(a, np.float64).reshape(-1) for a in args]
    out = np.empty(flat[0].shape, np.float64)
    if len(args) == 1:
        _unary_loop(UNARY.index(name), flat[0], out)
    elif len(args) == 2:
        _binary_loop(BINARY.index(name), flat[0], flat[1], out)
    else:
        _ternary_loop(flat[0], flat[1], flat[2], out)
    return out.reshape(args[0].shape).astype(dtype)

"""Complex-number primitives: real, imag, conj and complex, with their rules.

JAX differentiates complex functions by transposing linear maps, never by conjugating: the
transpose of `real` is `complex(ct, 0)`, of `imag` is `complex(0, -ct)`, of `conj` is `conj`, and
`grad` of a real-valued function of a complex input comes out as the conjugate of the usual
Wirtinger derivative d/dz-bar, times 2 (as JAX's autodiff cookbook describes)."""
from __future__ import annotations

import numpy as np

from corejax import dtypes
from corejax.core import ShapedArray, get_aval
from corejax.transforms import ad
from corejax.transforms.ad import Zero
from corejax.lax._factories import check_dtype, naryop, unop

__all__ = ["real", "imag", "conj", "complex"]

real_dtype, complex_dtype = dtypes.real_dtype, dtypes.complex_dtype


def _keep_weak(prim, out_dtype):
    """`prim`'s result has dtype `out_dtype(input dtype)` and keeps the operands' weak type."""
    strong_rule = prim.abstract_eval

    def abstract_eval(*avals, **params):
        strong_rule(*avals, **params)
        return ShapedArray(avals[0].shape, out_dtype(avals[0].dtype, **params),
                           all(a.weak_type for a in avals))

    prim.def_abstract_eval(abstract_eval)
    prim.weak_type_rule = lambda *args, **params: all(dtypes.is_weakly_typed(a) for a in args)
    return prim


real_p = _keep_weak(unop("real", np.real, ("complexfloating",)), lambda dt: real_dtype(dt))
imag_p = _keep_weak(unop("imag", np.imag, ("complexfloating",)), lambda dt: real_dtype(dt))


def _conj_impl(x, input_dtype=None):
    return np.conj(x.astype(complex_dtype(x.dtype)) if x.dtype.kind != "c" else x)


conj_p = _keep_weak(unop("conj", _conj_impl, ("floating", "complexfloating")),
                    lambda dt, input_dtype=None: complex_dtype(dt))
complex_p = _keep_weak(
    naryop("complex", lambda x, y: (x + 1j * y).astype(complex_dtype(x.dtype)),
           (("floating",), ("floating",))),
    lambda dt: complex_dtype(dt))


def real(x):
    """The real part of a complex array (lax.real)."""
    check_dtype("real", get_aval(x), ("complexfloating",))
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array (lax.imag)."""
    check_dtype("imag", get_aval(x), ("complexfloating",))
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate (lax.conj); a real operand gives a complex result."""
    aval = get_aval(x)
    check_dtype("conj", aval, ("floating", "complexfloating"))
    return conj_p.bind(x, input_dtype=aval.dtype)


def complex(x, y):
    """x + i*y elementwise from two real arrays of one dtype (lax.complex)."""
    from corejax.lax.elementwise import _prepare
    x, y = _prepare(x, y, name="complex")
    complex_p.abstract_eval(get_aval(x), get_aval(y))  # eager binds skip the dtype checks
    return complex_p.bind(x, y)


def _real_transpose(ct, x):
    if type(ct) is Zero:
        return [None]
    return [complex(ct, _zeros_like(ct))]


def _imag_transpose(ct, x):
    if type(ct) is Zero:
        return [None]
    from corejax.lax.elementwise import neg
    return [complex(_zeros_like(ct), neg(ct))]


def _conj_transpose(ct, x, input_dtype=None):
    if type(ct) is Zero:
        return [None]
    if np.dtype(input_dtype).kind != "c":
        return [real(ct)]
    return [conj(ct)]


def _complex_transpose(ct, x, y):
    if type(ct) is Zero:
        return [None, None]
    from corejax.lax.elementwise import neg
    return [real(ct), neg(imag(ct))]


def _zeros_like(x):
    from corejax.lax.elementwise import full_like
    return full_like(x, 0)


ad.deflinear(real_p, _real_transpose)
ad.deflinear(imag_p, _imag_transpose)
ad.deflinear(conj_p, _conj_transpose)
ad.deflinear(complex_p, _complex_transpose)


def abs_jvp(t, ans, x):
    """d|x| for complex x: Re(conj(x) t) / |x|, taken as 0 where x == 0 (as JAX does)."""
    from corejax.lax.elementwise import convert_element_type, div, eq, full_like, mul, select
    safe = select(eq(ans, full_like(ans, 0)), full_like(ans, 1), ans)
    ratio = div(conj(x), convert_element_type(safe, get_aval(x).dtype))
    return real(mul(t, ratio))


def astype_real(x, new_dtype):
    """jnp's astype from complex to a real dtype: the real part, with JAX's DeprecationWarning
    (a future JAX raises instead)."""
    import warnings
    if get_aval(x).dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. Please "
                      "first use jnp.real or jnp.imag to take the real/imaginary component of "
                      "your input.", DeprecationWarning, stacklevel=3)
        return real(x)
    return x

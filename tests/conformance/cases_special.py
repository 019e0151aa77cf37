"""Conformance cases of the special functions: lax's special-function primitives,
jax.scipy.special and jax.scipy.stats (loaded by cases.py after its own cases)."""
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

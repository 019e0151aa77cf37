"""Conformance cases of the Fourier transforms: lax.fft and jax.numpy.fft (loaded by cases.py
after its own cases). Complex inputs of differentiated cases go through cases_complex's "cplx"
wrapper (two real arrays in, the real and imaginary parts out), so grad, jvp, vjp and second
order exercise the fft primitive's transposes with real inputs and outputs."""
import cases
from cases import BASIC, FULL, NOGRAD, Ref, add, case

cases.MODULES.append("numpy.fft")

LINEAR = ("eager", "jit", "vmap", "jvp", "vjp")  # real in, complex out: no scalar to grad
NOHVP = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "jit_grad")

# ---------------------------------------------------------------- lax.fft

add(case("lax.fft", "c64[3,4]", "fft", (4,), label="fft", ulp=16),
    case("lax.fft", "c64[2,3,4]", "ifft", (3, 4), label="ifft2d", ulp=16),
    case("lax.fft", "f32[3,6]", "rfft", (6,), label="rfft", transforms=LINEAR, ulp=16),
    case("lax.fft", "f32[2,4,5]", "rfft", (4, 5), label="rfft2d", transforms=LINEAR, ulp=16),
    case("lax.fft", "c64[3,4]", "irfft", (6,), label="irfft", ulp=16),
    case("lax.fft", "c64[2,3]", "irfft", (2, 5), label="irfft2d_odd", ulp=16),
    case("lax.fft", "f32[5]", "fft", (5,), label="real_fft", transforms=LINEAR, ulp=16),
    case("lax.fft", "f32[6]", "rfft", (5,), label="length_error", transforms=("eager",)),
    case("lax.fft", "c64[2,3]", "fft", (1, 2, 3), label="rank_error", transforms=("eager",)),
    case("lax.fft", "c128[8]", "fft", (8,), label="f64", x64=True, transforms=BASIC, ulp=16))
for _label, _x, _y, _type, _lengths in [("fft", "f32[3,4]", "f32[3,4]", "fft", (4,)),
                                        ("ifft", "f32[2,5]", "f32[2,5]", "ifft", (2, 5)),
                                        ("irfft_even", "f32[3,4]", "f32[3,4]", "irfft", (6,)),
                                        ("irfft_odd", "f32[2,4]", "f32[2,4]", "irfft", (7,)),
                                        ("irfft2d", "f32[3,3]", "f32[3,3]", "irfft", (3, 4))]:
    add(case("array.cplx", _x, _y, Ref("lax.fft"), label="lax_" + _label, transforms=FULL,
             kwargs={"fft_type": _type, "fft_lengths": _lengths}, ulp=32))

# ---------------------------------------------------------------- jnp.fft

_F = "numpy.fft."
for _fn in ("fft", "ifft", "fftn", "ifftn", "fft2", "ifft2", "hfft"):
    add(case(_F + _fn, "c64[3,4]", ulp=16),
        case("array.cplx", "f32[3,4]", "f32[3,4]", Ref(_F + _fn), label="d_" + _fn,
             transforms=NOHVP, ulp=32))
for _fn in ("irfft", "irfftn", "irfft2"):
    add(case(_F + _fn, "c64[3,4]", ulp=16),
        case("array.cplx", "f32[3,4]", "f32[3,4]", Ref(_F + _fn), label="d_" + _fn,
             transforms=FULL, ulp=32))
for _fn in ("rfft", "rfftn", "rfft2", "ihfft", "fft"):
    add(case(_F + _fn, "f32[4,6]", label="real", transforms=LINEAR, ulp=16))
add(case(_F + "rfft", "f32[2,5]", kwargs={"n": 8, "axis": 0}, label="pad_axis0",
         transforms=LINEAR, ulp=16),
    case(_F + "fft", "c64[6]", kwargs={"n": 4}, label="crop", ulp=16),
    case(_F + "irfft", "c64[5]", kwargs={"n": 7}, label="n7", ulp=16),
    case(_F + "hfft", "c64[4]", kwargs={"n": 5, "norm": "ortho"}, label="n5_ortho", ulp=16),
    case(_F + "ihfft", "f32[5]", kwargs={"norm": "forward"}, label="forward",
         transforms=LINEAR, ulp=16),
    case(_F + "fftn", "c64[2,3,4]", kwargs={"s": (3, 2), "axes": (0, 2)}, label="s_axes",
         ulp=16),
    case(_F + "rfftn", "f32[2,3,4]", kwargs={"s": (4, 4)}, label="s_only", transforms=LINEAR,
         ulp=16),
    case(_F + "irfftn", "c64[2,2,2,2]", label="four_axes", ulp=16),
    case(_F + "ifft2", "c64[3,4]", kwargs={"s": (4, 5)}, label="pad", ulp=16),
    case(_F + "rfft2", "i32[4,4]", label="int_input", transforms=BASIC, ulp=16),
    case(_F + "fft", "i32[4]", label="int_input", transforms=BASIC, ulp=16),
    case(_F + "ifft", "c128[5]", x64=True, label="f64", transforms=BASIC, ulp=16),
    case(_F + "fft", "f32[4]", kwargs={"norm": "bad"}, label="norm_error",
         transforms=("eager",)),
    case(_F + "rfft", "c64[4]", label="complex_error", transforms=("eager",)),
    case(_F + "fftn", "c64[3,3]", kwargs={"axes": (0, 0)}, label="repeated_axes",
         transforms=("eager",)),
    case(_F + "fft", "c64[4]", kwargs={"axis": 2}, label="axis_error", transforms=("eager",)),
    case(_F + "fft2", "c64[4]", label="rank_error", transforms=("eager",)))
for _norm in ("ortho", "forward", "backward"):
    add(case(_F + "fft", "c64[2,5]", kwargs={"norm": _norm}, label="norm_" + _norm, ulp=16),
        case(_F + "irfft", "c64[2,5]", kwargs={"norm": _norm}, label="norm_" + _norm,
             ulp=16),
        case("array.cplx", "f32[2,4]", "f32[2,4]", Ref(_F + "ifft"), label="d_ifft_" + _norm,
             kwargs={"norm": _norm}, transforms=("eager", "grad", "vjp"), ulp=32))
add(case(_F + "fftfreq", 5, static=(0,), transforms=BASIC),
    case(_F + "fftfreq", 8, 0.1, static=(0,), label="d", transforms=BASIC),
    case(_F + "fftfreq", 4, "f32[]:pos", static=(0,), label="traced_d", transforms=BASIC),
    case(_F + "rfftfreq", 7, static=(0,), transforms=BASIC),
    case(_F + "rfftfreq", 6, 2.0, static=(0,), label="d", transforms=BASIC),
    case(_F + "fftfreq", 4, static=(0,), kwargs={"dtype": Ref("numpy.float16")},
         label="f16", transforms=BASIC),
    case(_F + "fftshift", "f32[5]", transforms=FULL), case(_F + "fftshift", "i32[2,4]"),
    case(_F + "fftshift", "f32[3,4]", kwargs={"axes": 1}, label="axis1"),
    case(_F + "ifftshift", "f32[5]", transforms=FULL),
    case(_F + "ifftshift", "f32[3,4]", kwargs={"axes": (0,)}, label="axes0"))

# ---------------------------------------------------------------- jax.scipy.signal

cases.MODULES.append("scipy.signal")
cases.SKIP_REASONS["scipy.signal"] = {
    n: "not provided by corejax (SciPy's spectral estimators)" for n in (
        "stft", "istft", "csd", "welch")}
_G = "scipy.signal."
for _mode in ("full", "same", "valid"):
    add(case(_G + "fftconvolve", "f32[6]", "f32[3]", _mode, static=(2,), label=_mode,
             transforms=NOHVP, ulp=64),
        case(_G + "convolve", "f32[4,5]", "f32[2,3]", _mode, static=(2,), label=_mode,
             transforms=NOHVP, ulp=32),
        case(_G + "correlate", "f32[5]", "f32[4]", _mode, static=(2,), label=_mode, ulp=32),
        case(_G + "correlate2d", "f32[4,5]", "f32[2,3]", _mode, static=(2,), label=_mode,
             ulp=32),
        case(_G + "convolve2d", "f32[3,3]", "f32[4,5]", _mode, static=(2,), label=_mode,
             ulp=32))
add(case(_G + "fftconvolve", "f32[3,6]", "f32[3,4]", kwargs={"axes": 1, "mode": "same"},
         label="axes", ulp=64),
    case(_G + "fftconvolve", "c64[5]", "f32[3]", label="complex", ulp=64),
    case(_G + "fftconvolve", "i32[4]", "i32[3]", label="int", transforms=BASIC, ulp=64),
    case(_G + "fftconvolve", "f32[3,4]", "f32[2,3]", kwargs={"axes": 1}, label="axes_error",
         transforms=("eager",)),
    case(_G + "fftconvolve", "f32[3]", "f32[2,2]", label="rank_error", transforms=("eager",)),
    case(_G + "fftconvolve", "f32[3,1]", "f32[1,3]", "valid", static=(2,),
         label="valid_error", transforms=("eager",)),
    case(_G + "convolve", "f32[5]", "f32[3]", kwargs={"method": "fft"}, label="fft",
         transforms=NOHVP, ulp=64),
    case(_G + "convolve", "f32[5]", "f32[3]", kwargs={"method": "bad"}, label="method_error",
         transforms=("eager",)),
    case(_G + "correlate", "c64[5]", "c64[3]", kwargs={"method": "fft"}, label="complex_fft",
         ulp=64),
    case(_G + "correlate", "c64[5]", "c64[3]", label="complex", ulp=32),
    case(_G + "correlate2d", "f32[4,5]", "f32[5,2]", label="shape_error",
         transforms=("eager",)),
    case(_G + "convolve2d", "f32[3]", "f32[2]", label="rank_error", transforms=("eager",)),
    case(_G + "detrend", "f32[3,8]", transforms=FULL, ulp=64),
    case(_G + "detrend", "f32[6,3]", kwargs={"axis": 0, "type": "constant"}, label="constant",
         ulp=32),
    case(_G + "detrend", "f32[9]", kwargs={"bp": [3, 5]}, label="breakpoints", ulp=64),
    case(_G + "detrend", "f32[4]", kwargs={"type": "quadratic"}, label="type_error",
         transforms=("eager",)))

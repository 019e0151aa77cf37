"""Conformance cases of the Fourier transforms: lax.fft and jax.numpy.fft (loaded by cases.py
after its own cases). Complex inputs of differentiated cases go through cases_complex's "cplx"
wrapper (two real arrays in, the real and imaginary parts out), so grad, jvp, vjp and second
order exercise the fft primitive's transposes with real inputs and outputs."""
import cases
from cases import BASIC, FULL, NOGRAD, Call, Ref, add, case

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
    case("lax.fft", "c128[8]", "fft", (8,), label="f64", x64=True, transforms=BASIC, ulp=16),
    case("lax.fft", "f32[2,6]", Call("lax.FftType", 2), (6,), label="enum_rfft", ulp=16))
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

# ---------------------------------------------------------------- jax.scipy.signal's spectral
# estimators. Their complex results reach grad through "spectral_parts" (each complex output
# split into its real and imaginary parts); istft's complex input through cases_complex's "cplx".


def _spectral_parts(fn, *args, **kwargs):
    return tuple(p for out in fn(*args, **kwargs)
                 for p in ((out.real, out.imag) if out.dtype.kind == "c" else (out,)))


cases.ARRAY_OPS["spectral_parts"] = _spectral_parts
_STFT, _CSD, _ISTFT = Ref(_G + "stft"), Ref(_G + "csd"), Ref(_G + "istft")
for _label, _kw in [("hann", {}), ("hamming", {"window": "hamming"}),
                    ("tukey", {"window": ("tukey", 0.3)}), ("noverlap2", {"noverlap": 2}),
                    ("nfft12", {"nfft": 12}), ("nfft11", {"nfft": 11}),
                    ("nperseg7", {"nperseg": 7}),
                    ("constant", {"detrend": "constant"}), ("linear", {"detrend": "linear"}),
                    ("callable", {"detrend": Ref(_G + "detrend")}),
                    ("twosided", {"return_onesided": False}), ("no_boundary", {"boundary": None}),
                    ("even", {"boundary": "even"}), ("odd", {"boundary": "odd"}),
                    ("constant_ext", {"boundary": "constant"}), ("unpadded", {"padded": False}),
                    ("bare", {"boundary": None, "padded": False}), ("noverlap0", {"noverlap": 0}),
                    ("noverlap7", {"noverlap": 7}), ("fs", {"fs": 3.0}),
                    ("window_array", {"window": "f32[8]:pos"}), ("traced_fs", {"fs": "f32[]:pos"})]:
    add(case(_G + "stft", "f32[2,21]", kwargs={"nperseg": 8, **_kw}, label=_label, ulp=32))
add(case("array.spectral_parts", _STFT, "f32[21]", kwargs={"nperseg": 8}, label="d_stft",
         transforms=FULL, ulp=64),
    case("array.spectral_parts", _STFT, "f32[2,19]",
         kwargs={"nperseg": 6, "nfft": 9, "detrend": "linear", "boundary": "odd",
                 "window": "f32[6]:pos", "fs": "f32[]:pos"},
         label="d_stft_options", transforms=NOHVP, ulp=64),
    case("array.cplx", "f32[22]", "f32[22]", _STFT, kwargs={"nperseg": 8}, label="d_stft_complex",
         transforms=NOHVP, ulp=64),
    case(_G + "stft", "c64[2,21]", kwargs={"nperseg": 8}, label="complex", ulp=32),
    case(_G + "stft", "i32[21]", kwargs={"nperseg": 8}, label="int", transforms=BASIC, ulp=32),
    case(_G + "stft", "f64[21]", kwargs={"nperseg": 8}, label="f64", x64=True, transforms=BASIC,
         ulp=32),
    case(_G + "stft", "f32[20]", label="default_nperseg", ulp=32),
    case(_G + "stft", "f32[19,2]", kwargs={"nperseg": 8, "axis": 0}, label="axis0", ulp=32),
    case(_G + "stft", "f32[2,19,3]", kwargs={"nperseg": 8, "axis": 1,
                                              "detrend": Ref(_G + "detrend")},
         label="axis1_callable", ulp=32),
    case(_G + "stft", "f32[0]", kwargs={"nperseg": 8}, label="empty", transforms=BASIC))
for _label, _kw in [("noverlap_error", {"noverlap": 8}), ("nfft_error", {"nfft": 4}),
                    ("boundary_error", {"boundary": "bad"}), ("nperseg_error", {"nperseg": 0}),
                    ("window_name_error", {"window": "bogus"}),
                    ("window_length_error", {"window": "f32[5]"}),
                    ("window_rank_error", {"window": "f32[2,4]"}),
                    ("detrend_error", {"detrend": True}), ("detrend_type_error",
                                                           {"detrend": "bogus"}),
                    ("axis_error", {"axis": 2})]:
    add(case(_G + "stft", "f32[2,21]", kwargs={"nperseg": 8, **_kw}, label=_label,
             transforms=("eager",)))
add(case(_G + "stft", "f16[21]", kwargs={"nperseg": 8}, label="f16_error", transforms=("eager",)),
    case(_G + "stft", "f32[5]", kwargs={"window": "f32[8]"}, label="window_too_long",
         transforms=("eager",)))

for _label, _kw in [("mean", {}), ("median", {"average": "median"}),
                    ("median_even", {"average": "median", "nperseg": 4}),
                    ("hamming", {"window": "hamming"}), ("nfft11", {"nfft": 11}),
                    ("nperseg7", {"nperseg": 7}), ("no_detrend", {"detrend": False}),
                    ("linear", {"detrend": "linear"}),
                    ("callable", {"detrend": Ref(_G + "detrend")}),
                    ("twosided", {"return_onesided": False}), ("spectrum", {"scaling": "spectrum"}),
                    ("one_segment", {"nperseg": 23}),
                    ("one_segment_median", {"nperseg": 23, "average": "median"}),
                    ("fs", {"fs": 3.0}), ("traced_fs", {"fs": "f32[]:pos"}),
                    ("window_array", {"window": "f32[8]:pos"})]:
    add(case(_G + "welch", "f32[2,23]", kwargs={"nperseg": 8, **_kw}, label=_label, ulp=32),
        case(_G + "csd", "f32[2,23]", "f32[2,23]", kwargs={"nperseg": 8, **_kw}, label=_label,
             ulp=32))
add(case(_G + "welch", "f32[2,23]", kwargs={"nperseg": 8}, label="d_welch", transforms=FULL,
         ulp=64),
    case(_G + "welch", "f32[23]", kwargs={"nperseg": 8, "average": "median"},
         label="d_median", transforms=NOHVP, ulp=64),
    case("array.spectral_parts", _CSD, "f32[2,23]", "f32[2,23]", kwargs={"nperseg": 8},
         label="d_csd", transforms=FULL, ulp=64),
    case("array.spectral_parts", _CSD, "f32[21]", "f32[21]",
         kwargs={"nperseg": 8, "nfft": 9, "detrend": "linear", "scaling": "spectrum",
                 "fs": "f32[]:pos"}, label="d_csd_options", transforms=NOHVP, ulp=64),
    case("array.spectral_parts", _CSD, "f32[21]", "f32[21]",
         kwargs={"nperseg": 8, "average": "median"}, label="d_csd_median", transforms=NOHVP,
         ulp=64),
    case(_G + "welch", "c64[2,23]", kwargs={"nperseg": 8}, label="complex", ulp=32),
    case(_G + "welch", "c64[23]", kwargs={"nperseg": 8, "average": "median"},
         label="complex_median", ulp=32),
    case(_G + "csd", "c64[2,23]", "f32[2,23]", kwargs={"nperseg": 8}, label="complex", ulp=32),
    case(_G + "csd", "c64[23]", "c64[23]", kwargs={"nperseg": 8, "average": "median"},
         label="complex_median", ulp=32),
    case(_G + "csd", "f32[2,23]", "f32[2,17]", kwargs={"nperseg": 8}, label="unequal_lengths",
         ulp=32),
    case(_G + "csd", "f32[2,23]", "f32[1,23]", kwargs={"nperseg": 8}, label="broadcast",
         ulp=32),
    case(_G + "csd", "f32[23]", "f64[23]", kwargs={"nperseg": 8}, label="mixed_f64", x64=True,
         transforms=BASIC, ulp=32),
    case(_G + "csd", "f32[23]", "f32[2,23]", kwargs={"nperseg": 8}, label="rank_error",
         transforms=("eager",)),
    case(_G + "welch", "f32[300]", label="default_nperseg", ulp=32),
    case(_G + "welch", "f32[20]", label="short_default", ulp=32),
    case(_G + "welch", "i32[23]", kwargs={"nperseg": 8}, label="int", transforms=BASIC, ulp=32),
    case(_G + "welch", "f64[2,23]", kwargs={"nperseg": 8}, label="f64", x64=True,
         transforms=BASIC, ulp=32),
    case(_G + "welch", "f32[23,2]", kwargs={"nperseg": 8, "axis": 0}, label="axis0", ulp=32),
    case(_G + "welch", "f32[2,23,3]", kwargs={"nperseg": 8, "axis": 1}, label="axis1_3d",
         ulp=32),
    case(_G + "welch", "f32[2,0]", kwargs={"nperseg": 8}, label="empty", transforms=BASIC),
    case(_G + "welch", "f32[23]", kwargs={"nperseg": 8, "scaling": "bad"}, label="scaling_error",
         transforms=("eager",)),
    case(_G + "welch", "f32[23]", kwargs={"nperseg": 8, "average": "bad"}, label="average_error",
         transforms=("eager",)),
    case(_G + "welch", "f32[23]", kwargs={"nperseg": 8, "noverlap": 8}, label="noverlap_error",
         transforms=("eager",)),
    case(_G + "welch", "f16[23]", kwargs={"nperseg": 8}, label="f16_error", transforms=("eager",)),
    case(_G + "welch", "f16[23]", kwargs={"nperseg": 8, "return_onesided": False},
         label="f16_twosided", transforms=BASIC, ulp=64))

for _label, _kw in [("default", {}), ("nperseg8", {"nperseg": 8}), ("fs", {"fs": 2.0}),
                    ("traced_fs", {"fs": "f32[]:pos"}), ("hamming", {"window": "hamming"}),
                    ("window_array", {"window": "f32[8]:pos"}), ("noverlap5", {"noverlap": 5}),
                    ("nfft", {"nperseg": 6, "nfft": 8}), ("nperseg6", {"nperseg": 6}),
                    ("no_boundary", {"boundary": False}), ("twosided", {"input_onesided": False}),
                    ("nperseg0_default", {"nperseg": 0}), ("noverlap0_default", {"noverlap": 0})]:
    add(case(_G + "istft", "c64[2,5,7]", kwargs=_kw, label=_label, ulp=32))
add(case("array.cplx", "f32[5,7]", "f32[5,7]", _ISTFT, label="d_istft", transforms=FULL,
         ulp=64),
    case("array.cplx", "f32[2,5,6]", "f32[2,5,6]", _ISTFT,
         kwargs={"window": ("tukey", 0.5), "noverlap": 5, "boundary": False},
         label="d_istft_options", transforms=NOHVP, ulp=64),
    case("array.cplx", "f32[8,6]", "f32[8,6]", _ISTFT, kwargs={"input_onesided": False},
         label="d_istft_twosided", transforms=NOHVP, ulp=64),
    case(_G + "istft", "c64[6,2,5]", kwargs={"time_axis": 0, "freq_axis": -1}, label="axes",
         ulp=32),
    case(_G + "istft", "c64[2,5,3,6]", kwargs={"time_axis": -1, "freq_axis": 1},
         label="axes_4d", ulp=32),
    case(_G + "istft", "f32[5,6]", label="real_input", ulp=32),
    case(_G + "istft", "i32[5,6]", label="int_input", transforms=BASIC, ulp=32),
    case(_G + "istft", "c128[5,6]", label="f64", x64=True, transforms=BASIC, ulp=32),
    case(_G + "istft", "c128[5,6]", kwargs={"window": "f64[8]:pos"}, label="f64_window",
         x64=True, transforms=BASIC, ulp=32),
    case(_G + "istft", "c64[5]", label="rank_error", transforms=("eager",)),
    case(_G + "istft", "c64[5,6]", kwargs={"time_axis": 0, "freq_axis": 0},
         label="same_axes_error", transforms=("eager",)),
    case(_G + "istft", "c64[5,6]", kwargs={"noverlap": 8}, label="noverlap_error",
         transforms=("eager",)),
    case(_G + "istft", "c64[5,6]", kwargs={"nperseg": -2}, label="nperseg_error",
         transforms=("eager",)),
    case(_G + "istft", "c64[5,6]", kwargs={"nperseg": 8, "nfft": 6}, label="nfft_error",
         transforms=("eager",)),
    case(_G + "istft", "c64[5,6]", kwargs={"window": "f32[5]"}, label="window_length_error",
         transforms=("eager",)),
    case(_G + "istft", "c64[5,6]", kwargs={"window": "f32[2,4]"}, label="window_rank_error",
         transforms=("eager",)))

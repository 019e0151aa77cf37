"""Imported by the benchmarks before NumPy: OpenBLAS's idle workers spin 2**20 cycles after a
threaded GEMM instead of 2**28, as in a process that imports corejax first (train.py, and
corejax/__init__.py, which explains why). OpenBLAS reads the variable once, when NumPy loads
it, so a benchmark that imports NumPy before corejax would otherwise measure the default; a
value set in the environment is kept. The JAX and PyTorch sides get it too and ignore it (XLA
and PyTorch do not run their GEMMs on OpenBLAS).

`kernels()` names what runs corejax's products, which the benchmarks print: its own float32
GEMM (corejax/compiler/sgemm.py, with the vector width it uses here) unless
COREJAX_SGEMM=openblas, and for the other dtypes the kernels NumPy's OpenBLAS runs and the
OPENBLAS_* settings of the environment (XLA's and PyTorch's products do not run on OpenBLAS:
a pin such as OPENBLAS_CORETYPE=Haswell, AVX2 kernels on a CPU with AVX-512, changes
corejax's float64 products alone now, and its float32 ones under COREJAX_SGEMM=openblas)."""
import ctypes
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")


def kernels() -> str:
    """'OpenBLAS <version>, <core> kernels (OPENBLAS_X=..., ...)' for the OpenBLAS that NumPy
    loaded (after NumPy is imported), or what is known of it."""
    import numpy  # noqa: F401  (loads OpenBLAS)
    settings = ", ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                         if k.startswith("OPENBLAS_"))
    core = version = "unknown"
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "64_"),
                                   ("openblas", "")):
                name = getattr(lib, f"{prefix}_get_corename{suffix}", None)
                config = getattr(lib, f"{prefix}_get_config{suffix}", None)
                if name is not None:
                    name.restype = ctypes.c_char_p
                    core = name().decode()
                    if config is not None:
                        config.restype = ctypes.c_char_p
                        version = config().decode().split()[1]
                    break
    except (OSError, IndexError, AttributeError):
        pass
    openblas = (f"NumPy's OpenBLAS {version}: {core} kernels (environment: "
                f"{settings or 'no OPENBLAS_*'})")
    if os.environ.get("COREJAX_SGEMM", "own") == "openblas":
        return f"float32 and others: {openblas}"
    try:
        from corejax.compiler import sgemm
        own = f"corejax's own GEMM ({sgemm.VW}-lane vectors, {sgemm.MR}x{sgemm.NR} tiles)"
    except ImportError:
        own = "corejax's own GEMM"
    return f"float32: {own}; others: {openblas}"

"""Imported by the benchmarks before NumPy: OpenBLAS's idle workers spin 2**20 cycles after a
threaded GEMM instead of 2**28, as in a process that imports corejax first (train.py, and
corejax/__init__.py, which explains why). OpenBLAS reads the variable once, when NumPy loads
it, so a benchmark that imports NumPy before corejax would otherwise measure the default; a
value set in the environment is kept. The JAX and PyTorch sides get it too and ignore it (XLA
and PyTorch do not run their GEMMs on OpenBLAS)."""
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

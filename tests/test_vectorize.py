"""Fused elementwise kernels compile to SIMD code for the vector instructions of the machine
they run on (issue #32, "elementwise at memory speed"): read from the machine code of the
kernels jit actually builds, by bench/bench_jit.py's `kernel_vectors` (the table it prints
uses the same). On an x86 host with AVX-512F the arithmetic is on zmm registers (or ymm where
LLVM prefers 256-bit vectors, as on Intel's AVX-512 parts), with AVX2 on ymm, else on packed
xmm; a kernel compiled scalar (vmulss/vaddss on xmm) fails. Other architectures: skipped."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax.compiler import codegen
from conftest import ROOT, load_bench

bench_jit = load_bench("bench_jit")
ISA = bench_jit.host_isa()
pytestmark = pytest.mark.skipif(not ISA["x86"], reason="reads x86 vector registers "
                                "(xmm/ymm/zmm) in the kernels' machine code")

# the widths the host's vector arithmetic may take
WIDTHS = {"zmm", "ymm"} if ISA["avx512f"] else {"ymm"} if ISA["avx2"] else {"xmm"}

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def selu(x):
    return SCALE * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)


def kernels_of(f, *args):
    exe = f.lower(*args).compile().runtime_executable()
    ks = bench_jit.kernel_vectors(exe)
    assert ks, f"no fused kernel in:\n{exe.as_text()}"
    return exe, ks


def assert_vectorized(f, *args):
    exe, ks = kernels_of(f, *args)
    for k in ks:
        assert k["width"] in WIDTHS, (
            f"kernel k_{k['key']} computes on {k['width']} (arithmetic by width: "
            f"{k['counts']}); expected {sorted(WIDTHS)} on {ISA['cpu']} "
            f"(AVX2 {ISA['avx2']}, AVX-512F {ISA['avx512f']}):\n{exe.as_text()}")
    return ks


def test_a_kernel_with_many_inputs_and_outputs_is_vectorized(cache_dir):
    # An LSTM cell's step keeping its residuals: 9 inputs, 12 outputs. LLVM checks at run time
    # that each written array overlaps no other, and by default gives up past 128 checks
    # (diskcache.LLVM_OPTIONS raises that): the kernel ran scalar, some 10x slower.
    def cell(a0, a1, a2, a3, a4, a5, a6, a7, a8):
        i = jax.nn.sigmoid(a0 + a1)
        f = jax.nn.sigmoid(a2 + a3)
        o = jax.nn.sigmoid(a5 + a6)
        g = jnp.tanh(a7 + a8)
        c = f * a4 + o * g
        h = jnp.tanh(c)
        return (i, i * (1 - i), f, f * (1 - f), o, o * (1 - o), g, 1 - g * g, c, h,
                1 - h * h, i * h)
    rng = np.random.default_rng(0)
    args = [jnp.asarray(rng.standard_normal(4096).astype(np.float32)) for _ in range(9)]
    f = jax.jit(cell)
    f(*args)
    ks = assert_vectorized(f, *args)
    assert len(ks) == 1


def test_selu_float32_kernel_is_vectorized_for_the_host(cache_dir):
    x = jnp.asarray(np.linspace(-3, 3, 4096, dtype=np.float32))
    f = jax.jit(selu)
    f(x)
    ks = assert_vectorized(f, x)
    assert len(ks) == 1 and not ks[0]["parallel"]   # one fused loop, as over 1M elements


def test_row_and_column_broadcasts_are_vectorized(cache_dir, rng):
    x = jnp.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    b = jnp.asarray(rng.standard_normal(256).astype(np.float32))
    c = jnp.asarray(rng.standard_normal((64, 1)).astype(np.float32))
    f = jax.jit(lambda x, b, c: jnp.tanh(x * b + c) * 2.0)
    np.testing.assert_allclose(np.asarray(f(x, b, c)),
                               np.tanh(np.asarray(x) * np.asarray(b) + np.asarray(c)) * 2,
                               rtol=1e-5, atol=1e-6)
    assert_vectorized(f, x, b, c)


def test_transposed_operand_is_vectorized(cache_dir, rng):
    x = jnp.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    y = jnp.asarray(rng.standard_normal((256, 64)).astype(np.float32))
    f = jax.jit(lambda x, y: x * y.T + 1.0)
    np.testing.assert_allclose(np.asarray(f(x, y)), np.asarray(x) * np.asarray(y).T + 1,
                               rtol=1e-6)
    exe, _ = kernels_of(f, x, y)
    assert "i1 * n0 + i0" in exe.as_text()      # the operand is read across the inner loop
    assert_vectorized(f, x, y)


def test_threaded_kernel_body_is_vectorized(cache_dir, monkeypatch):
    # kernels over at least PARALLEL_MIN elements run their outer loop with prange; Numba
    # outlines the loop body into a function of its own, which kernel_vectors reads
    monkeypatch.setattr(codegen, "PARALLEL_MIN", 1024)
    x = jnp.asarray(np.linspace(-3, 3, 8192, dtype=np.float32))
    f = jax.jit(lambda x: selu(x) * 0.5)
    f(x)
    ks = assert_vectorized(f, x)
    assert all(k["parallel"] for k in ks)


def test_max_over_rows_is_vectorized(cache_dir, rng):
    # (with kernel_lib.fmax's NaN branches it compiled scalar: 2000x2000 took 5.3 ms, np.max
    # 0.41 ms; LLVM's IEEE maximum intrinsic vectorizes)
    x = jnp.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    f = jax.jit(lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=1)))
    f(x)
    assert_vectorized(f, x)


def test_sum_over_rows_is_vectorized(cache_dir, rng):
    x = jnp.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    f = jax.jit(lambda x: jnp.sum(x * 2.0, axis=1))
    f(x)
    assert_vectorized(f, x)


_SCALAR_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import corejax as jax, corejax.numpy as jnp
    sys.path.insert(0, sys.argv[1])
    import bench_jit
    f = jax.jit(bench_jit.selu(jnp))
    x = jnp.asarray(np.linspace(-3, 3, 4096, dtype=np.float32))
    f(x)
    exe = f.lower(x).compile().runtime_executable()
    print(json.dumps(bench_jit.kernel_vectors(exe)))
""")


def test_the_check_fails_on_a_kernel_compiled_scalar(tmp_path):
    # the same selu kernel with LLVM's loop vectorizer off (a fresh process: Numba reads the
    # setting once): the check reports scalar arithmetic, which assert_vectorized refuses
    env = dict(os.environ, NUMBA_LOOP_VECTORIZE="0", COREJAX_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", _SCALAR_CHILD, os.path.join(ROOT, "bench")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    ks = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(ks) == 1
    assert ks[0]["width"] == "scalar", ks
    assert ks[0]["counts"]["scalar"] > 0
    assert ks[0]["width"] not in WIDTHS


def test_counts_read_the_destination_register():
    asm = ("\tvmulps\t%zmm2, %zmm17, %zmm18\n"
           "\tvfmadd213ps\t(%rdi), %ymm1, %ymm3\n"
           "\tvmaxps\t%xmm16, %xmm1, %xmm17 {%k1}\n"
           "\tvaddss\t%xmm3, %xmm1, %xmm1\n"
           "\tmulps\t%xmm0, %xmm1\n"
           "\tvmovups\t%zmm16, (%rax,%r10,4)\n"      # a store of a vector: vector work
           "\tvxorps\t%xmm4, %xmm4, %xmm4\n"         # zeroing, on xmm: not counted
           "\tvmovss\t(%rcx), %xmm0\n")             # a scalar load: not counted
    assert bench_jit.vector_counts(asm) == {"zmm": 2, "ymm": 1, "xmm": 2, "scalar": 1}
    assert bench_jit.vector_width({"zmm": 0, "ymm": 0, "xmm": 0, "scalar": 3}) == "scalar"


def test_hot_loops_are_the_innermost_loops_that_load():
    asm = ("f:\n"
           ".LBB0_1:\n"                               # outer loop
           ".LBB0_2:\n"                               # inner loop: loads, scalar arithmetic
           "\tvmovss\t(%rcx,%r8,4), %xmm2\n"
           "\tvmaxss\t%xmm1, %xmm2, %xmm1\n"
           "\tjne\t.LBB0_2\n"
           "\tjne\t.LBB0_1\n"
           ".LBB0_3:\n"                               # a fill: stores only
           "\tvmovups\t%zmm0, (%rax,%r8,4)\n"
           "\tjne\t.LBB0_3\n")
    loops = bench_jit.hot_loops(asm)
    assert len(loops) == 1 and "vmaxss" in loops[0]
    assert bench_jit.vector_width(bench_jit.vector_counts(loops[0])) == "scalar"

"""The compiler's parts: IR passes, fusion decisions, generated source, the disk cache, the
executor's buffers, every result checked against the reference executor."""
import functools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
from corejax import lax
from corejax._machine import usable_cores
from corejax.compiler import compile_jaxpr, kernel_stats, diskcache
from corejax.compiler import gemm_sites, passes
from corejax.compiler.fusion import FusedGroup, HostStep, partition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def staged(f, *args):
    return jax.make_jaxpr(f)(*args)


def prims(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def run_both(closed, *args):
    ref = compile_jaxpr(closed, "reference")(*args)
    got = compile_jaxpr(closed, "cpu")(*args)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-6, atol=1e-6)
    return got


# --- passes ----------------------------------------------------------------------------------

def test_relu_masks_read_the_stored_relu_output():
    """The passes read gt(x, c) off a stored max(x, c) (and lt off a stored min), and only a
    stored one; the masks keep their bits for NaNs, infinities and signed zeros."""
    def eqn(closed, name):
        found, = [e for e in closed.jaxpr.eqns if e.primitive.name == name]
        return found

    def relu_and_mask(x, w, stored):
        h = jnp.maximum(x, 0.0)
        y = h @ w if stored else h * 2.0
        return y, jnp.where(x > 0.0, 1.0, -1.0), jnp.where(x < 1.0, jnp.minimum(x, 1.0) * 3, 9.0)

    x = np.array([[np.nan, -np.inf, np.inf, -0.0], [0.0, 1.0, -1.0, 1e-38]], np.float32)
    w = np.ones((4, 3), np.float32)
    for stored in (True, False):
        closed = passes.run_passes(staged(functools.partial(relu_and_mask, stored=stored), x, w))
        mask, relu = eqn(closed, "gt"), eqn(closed, "max")
        assert (mask.invars[0] is relu.outvars[0]) == stored
        # the min's result feeds only a fused product: not stored, no rewrite
        assert eqn(closed, "lt").invars[0] is not eqn(closed, "min").outvars[0]
        y, m, k = jax.jit(functools.partial(relu_and_mask, stored=stored))(x, w)
        np.testing.assert_array_equal(np.asarray(m), np.where(x > 0, 1.0, -1.0))
        np.testing.assert_array_equal(np.asarray(k), np.where(x < 1, np.minimum(x, 1) * 3, 9.0))
    closed = passes.run_passes(staged(lambda x, w: (jnp.minimum(x, 0.5) @ w, x < 0.5), x, w))
    assert eqn(closed, "lt").invars[0] is eqn(closed, "min").outvars[0]

def test_pass_list_is_named():
    names = [n for n, _ in passes.PASSES]
    assert {"inline", "simplify", "fold_constants", "cse", "dce"} <= set(names)


def test_dce_and_cse():
    def f(x):
        unused = jnp.exp(x) * 3.0      # noqa: F841  (dead)
        a = jnp.sin(x)
        b = jnp.sin(x)
        return a + b

    closed = staged(f, jnp.ones(3))
    out = passes.dce(passes.cse(closed))
    assert prims(out).count("sin") == 1 and "exp" not in prims(out)
    run_both(closed, jnp.arange(3.0))


def test_algebraic_simplification():
    def f(x):
        y = x * 1.0
        y = y - 0.0
        y = jnp.transpose(jnp.transpose(y))
        y = jnp.reshape(jnp.reshape(y, (6,)), (3, 2))
        y = y.astype(jnp.float32)
        return y / 1.0

    x = jnp.arange(6.0).reshape(2, 3)
    closed = staged(f, x)
    out = passes.run_passes(closed)
    assert prims(out) == ["reshape"], prims(out)
    run_both(closed, x)


def test_add_zero_kept_for_float_signed_zero():
    # -0.0 + 0.0 is +0.0, so x + 0 is only an identity for integers.
    closed = staged(lambda x: x + 0.0, jnp.ones(2))
    assert "add" in prims(passes.run_passes(closed))
    closed_i = staged(lambda x: x + 0, jnp.ones(2, jnp.int32))
    assert "add" not in prims(passes.run_passes(closed_i))


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_sums_of_zero_pads_that_tile_an_axis_become_one_concatenation(dtype):
    # The gradient of split pieces is a zero pad per piece, summed (add_any); as a
    # concatenation it keeps the sum's bits, signed zeros included (-0.0 + 0.0 is +0.0).
    widths = (2, 1, 3, 2)
    if dtype == np.float32:
        def f(x):
            a, b, c, d = jnp.split(x, [2, 3, 6], axis=1)
            return a * 2, b * 3, c, d * -1

        def summed(x, *cot):
            return jax.vjp(f, x)[1](cot)[0]
    else:
        def summed(x, *pieces):     # the same sum written with add
            offsets = np.cumsum((0,) + widths)
            return functools.reduce(lambda s, t: s + t, [
                lax.pad(p, dtype(0), ((0, 0, 0), (int(lo), 8 - int(lo) - w, 0)))
                for p, lo, w in zip(pieces, offsets, widths)])

    x = np.arange(-8, 16).reshape(3, 8).astype(dtype)
    cot = [(np.where(np.arange(3 * n).reshape(3, n) % 2, -0.0, 1.5) * (i + 1)).astype(dtype)
           for i, n in enumerate(widths)]
    closed = staged(summed, x, *cot)
    out = passes.run_passes(closed)
    assert "concatenate" in prims(out) and "pad" not in prims(out), prims(out)
    want = compile_jaxpr(closed, "reference")(x, *cot)[0]
    _same_bits(compile_jaxpr(closed, "cpu")(x, *cot)[0], want)
    _same_bits(jax.jit(summed)(x, *cot), want)
    if dtype == np.float32:     # the pieces hold -0.0; the sum has +0.0 there
        want = np.asarray(want)
        assert (want == 0).sum() > 3 and not np.signbit(want[want == 0]).any()


def test_sums_of_zero_pads_with_gaps_or_overlaps_stay_sums():
    x = np.arange(24.0, dtype=np.float32).reshape(3, 8)

    def gap(x):     # pieces cover columns 0-1 and 4-7: columns 2-3 stay zero
        return jnp.pad(x[:, :2], ((0, 0), (0, 6))) + jnp.pad(x[:, 4:], ((0, 0), (4, 0)))

    def overlap(x):     # columns 2-3 are in both pieces
        return jnp.pad(x[:, :4], ((0, 0), (0, 4))) + jnp.pad(x[:, 2:], ((0, 0), (2, 0)))

    def two_axes(x):
        return jnp.pad(x[:1, :4], ((0, 2), (0, 4))) + jnp.pad(x[1:, 4:], ((1, 0), (4, 0)))

    for f in (gap, overlap, two_axes):
        out = passes.run_passes(staged(f, x))
        assert "concatenate" not in prims(out), (f.__name__, prims(out))
        _same_bits(jax.jit(f)(x), f(x))


def test_constant_folding():
    def f(x):
        c = jnp.exp(jnp.float32(2.0)) * 3.0
        return x * c

    closed = staged(f, jnp.ones(3))
    out = passes.run_passes(closed)
    assert "exp" not in prims(out)
    run_both(closed, jnp.arange(3.0))


def test_inline_nested_jit_and_custom_jvp():
    @jax.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))
    inner = jax.jit(lambda x: softplus(x) * 2.0)
    closed = staged(lambda x: inner(x) + inner(x), jnp.ones(4))
    assert "jit" in prims(closed)
    out = passes.run_passes(closed)
    assert not {"jit", "custom_jvp_call"} & set(prims(out))
    assert prims(out).count("exp") == 1          # inlined twice, then CSE'd
    run_both(closed, jnp.linspace(-2.0, 2.0, 4))


# --- fusion ----------------------------------------------------------------------------------

def _groups(f, *args):
    closed = passes.run_passes(staged(f, *args))
    return partition(closed.jaxpr)


def test_elementwise_chain_with_broadcasts_is_one_group():
    def selu(x):
        return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)

    steps = _groups(selu, jnp.ones(100))
    assert len(steps) == 1 and isinstance(steps[0], FusedGroup)


def test_reduction_terminates_group_and_dot_is_host_step():
    def f(w, x):
        h = jnp.tanh(x @ w + 1.0)
        return jnp.sum(h * h, axis=1)

    steps = _groups(f, jnp.ones((3, 4)), jnp.ones((5, 3)))
    kinds = [type(s).__name__ for s in steps]
    assert kinds == ["HostStep", "FusedGroup"], kinds
    g = steps[1]
    assert g.reduction is not None and [e.primitive.name for e in g.eqns] == ["add", "tanh", "mul"]
    run_both(staged(f, jnp.ones((3, 4)), jnp.ones((5, 3))),
             jnp.arange(12.0).reshape(3, 4) / 10, jnp.arange(15.0).reshape(5, 3) / 10)


def test_blas_steps_read_strided_transposed_and_mixed_dtype_operands():
    """A BLAS step takes 2-D operands of its own dtype as they are, or as their .T; strided
    views (slices a host step returns), operands of another dtype, 3-D operands and batched
    products go the general way: each equals the float64 product to float32 rounding."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 60)).astype(np.float32)
    w = rng.standard_normal((30, 60)).astype(np.float32)
    cases = {   # the product, on corejax (np = jnp) and in float64 NumPy (np = np)
        "strided slices": lambda np, x, w: x[::2] @ w.T[:, ::2],
        "contracting the leading dims": lambda np, x, w: x[:30].T @ w,
        "rhs transposed": lambda np, x, w: x @ w.T,
        "int32 rhs": lambda np, x, w: x @ (w.T * 4).astype(np.int32),
        "3-D lhs": lambda np, x, w: x.reshape(4, 10, 60) @ w.T,
        "batched": lambda np, x, w: np.einsum("bij,bkj->bik", x.reshape(4, 10, 60),
                                              w[:20].reshape(4, 5, 60)),
        # 2-D operands batched, or contracting no dim or both: no matrices as they are
        "row-wise dots": lambda np, x, w: np.einsum("ij,ij->i", x[:30], w),
        "outer (tensordot axes=0)": lambda np, x, w: np.tensordot(x[:3, :4], w[:2, :5], 0),
        "full (tensordot axes=2)": lambda np, x, w: np.tensordot(x[:30], w, 2),
    }
    for name, f in cases.items():
        got = np.asarray(jax.jit(functools.partial(f, jnp))(x, w))
        exact = f(np, x.astype(np.float64), w.astype(np.float64))
        assert got.dtype == np.float32 and got.shape == exact.shape, name
        np.testing.assert_allclose(got, exact, rtol=1e-4, atol=1e-4 * np.abs(exact).max(),
                                   err_msg=name)


def test_merged_dims_of_a_transposed_operand_are_read_as_a_view():
    # The weight gradient of a (batch, seq, features) activation contracts batch and seq: the
    # activation is the (features, batch * seq) matrix as an F-contiguous view, which BLAS
    # reads with its transpose flag (a C copy of it took twice the product's time); the
    # compiled loops' model of the executor's layouts says the same.
    from corejax.compiler import cpu
    from corejax.compiler.loop_lowerings import executor_matrix
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8, 16)).astype(np.float32)
    b = rng.standard_normal((4, 8, 5)).astype(np.float32)
    dot = cpu._DotStep(a.shape, a.dtype, b.shape, b.dtype, (((0, 1), (0, 1)), ((), ())), None)
    lhs, rhs = dot.matrices(a, b)
    assert lhs.shape == (16, 32) and lhs.flags.f_contiguous and np.shares_memory(lhs, a)
    assert executor_matrix(a, dot.lperm, dot.m, dot.k) == (True, True)
    assert executor_matrix(b, dot.rperm, dot.k, dot.n) == (True, False)
    want = a.reshape(32, 16).T.astype(np.float64) @ b.reshape(32, 5)
    np.testing.assert_allclose(dot(a, b, None), want, rtol=1e-5, atol=1e-5)
    # an operand no reshape can view is copied, C
    c = rng.standard_normal((8, 4, 16)).astype(np.float32).transpose(1, 0, 2)
    lhs, _ = dot.matrices(c, b)
    assert lhs.flags.c_contiguous and not np.shares_memory(lhs, c)
    assert executor_matrix(c, dot.lperm, dot.m, dot.k) == (False, False)


def test_shape_generic_kernels_are_shared():
    f = jax.jit(lambda x, y: jnp.tanh(x) * y + 2.0)
    f(jnp.ones(5), jnp.ones(5))
    before = len(diskcache._kernels)
    f(jnp.ones((7, 3)), jnp.ones((7, 3)))       # another shape, same kernel
    f(jnp.ones(11), jnp.ones(11))
    assert len(diskcache._kernels) == before
    g = jax.jit(lambda a, b: jnp.tanh(a) * b + 2.0)    # another program, same kernel
    g(jnp.ones(3), jnp.ones(3))
    assert len(diskcache._kernels) == before


def test_generated_source_indexes_broadcasts():
    f = jax.jit(lambda x, row: x * row[None, :] + jnp.arange(4.0))
    text = f.lower(jnp.ones((3, 4)), jnp.ones(4)).as_text()
    assert "broadcast_in_dim" not in text.split("# execution plan:")[1].split("# kernel")[0] \
        .replace("FusedGroup", "")
    assert "for i0 in range(n0):" in text
    x, r = np.arange(12.0, dtype=np.float32).reshape(3, 4), np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(f(x, r), x * r + np.arange(4.0))


def test_unlowered_primitive_is_a_host_step_in_text():
    f = jax.jit(lambda x: jnp.cumsum(jnp.exp(x)))
    text = f.lower(jnp.ones(4)).as_text()
    assert "host step cumsum [NumPy impl]" in text
    np.testing.assert_allclose(f(jnp.zeros(4)), [1, 2, 3, 4])


def test_output_buffers_are_reused_only_when_free():
    f = jax.jit(lambda x: x * 2.0)
    x = jnp.ones(50_000)
    a = f(x)
    b = f(x)                              # `a` is alive: a new buffer
    assert np.shares_memory(np.asarray(a), np.asarray(b)) is False
    np.testing.assert_allclose(a, 2.0)
    a_id = id(np.asarray(a))
    del a
    c = f(x + 1.0)                        # `a`'s buffer is free again: reused
    assert id(np.asarray(c)) == a_id
    np.testing.assert_allclose(b, 2.0)
    np.testing.assert_allclose(c, 4.0)


# --- disk cache ------------------------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import json
    import corejax as jax, corejax.numpy as jnp
    from corejax.compiler import kernel_stats
    f = jax.jit(lambda x: jnp.sum(jnp.exp(x) * 3.0 - x, axis=0))
    out = f(jnp.ones((4, 3)))
    print(json.dumps(dict(kernel_stats(), out=[float(v) for v in out])))
""")


def _child(cache_dir):
    env = dict(os.environ, COREJAX_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_disk_cache_reused_by_a_fresh_process(tmp_path):
    first = _child(tmp_path)
    assert first["kernels_compiled"] >= 1
    second = _child(tmp_path)
    assert second["kernels_compiled"] == 0 and second["kernels_loaded"] >= 1
    assert second["out"] == first["out"]


def test_corrupted_cache_entry_is_rebuilt(tmp_path):
    _child(tmp_path)
    kdir = tmp_path / "kernels"
    sources = sorted(kdir.glob("k_*.py"))
    assert sources
    for src in sources:
        src.write_text(src.read_text() + "\nthis is not python\n")
    for idx in (kdir / "__pycache__").glob("*.nbi"):
        idx.write_bytes(b"garbage")
    third = _child(tmp_path)
    assert third["rebuilt"] >= 1 and third["out"] == pytest.approx(
        [4 * (3 * np.e - 1)] * 3, rel=1e-5)
    fourth = _child(tmp_path)                 # the rebuilt entry is valid again
    assert fourth["kernels_compiled"] == 0


def test_corrupted_source_is_rebuilt_in_process(cache_dir):
    tmp_path = cache_dir
    body = ("import numpy as np\nfrom numba import njit\n\n"
            "@njit(cache=True)\ndef kernel(n0, a0, o0):\n"
            "    for i0 in range(n0):\n        o0[i0] = a0[i0] * np.float32(7.0)\n")
    sig = [diskcache.types.int64, diskcache.numba_type(np.float32),
           diskcache.numba_type(np.float32)]
    key = diskcache.kernel_key(body)
    path = tmp_path / "kernels" / f"k_{key}.py"
    path.parent.mkdir(parents=True)
    path.write_text("# corejax kernel sha256=0000\nsyntax error here(\n")
    fn, _ = diskcache.load_kernel(body, sig)
    out = np.empty(3, np.float32)
    fn(3, np.ones(3, np.float32), out)
    np.testing.assert_allclose(out, 7.0)
    assert path.read_text().endswith(body)


def test_kernel_key_covers_every_module_kernels_call(monkeypatch, tmp_path):
    # Kernels inline fastmath's functions, which live in fastmath_f32/_f64/_ops since a split,
    # and kernel_lib calls lax.prng's threefry: an edit to any of them must give new keys, or
    # a cache would keep the old machine code.
    names = {os.path.relpath(p, os.path.join(ROOT, "corejax")).replace(os.sep, "/")
             for p in diskcache.runtime_files()}
    assert {"compiler/fastmath.py", "compiler/fastmath_f32.py", "compiler/fastmath_f64.py",
            "compiler/fastmath_ops.py", "compiler/kernel_lib.py", "compiler/eager_threads.py",
            "compiler/eager_sums.py", "lax/prng.py", "lax/elementwise.py"} <= names
    assert "compiler/cpu.py" not in names    # imported inside functions only: no kernel runs it
    body = "def kernel(n0, a0, o0):\n    pass\n"
    fake = tmp_path / "fastmath_f32.py"
    fake.write_text("x = 1\n")
    monkeypatch.setattr(diskcache, "runtime_files", lambda: [str(fake)])
    monkeypatch.setattr(diskcache, "_runtime_digest", None)
    first = diskcache.kernel_key(body)
    fake.write_text("x = 2\n")
    monkeypatch.setattr(diskcache, "_runtime_digest", None)
    assert diskcache.kernel_key(body) != first


def test_cache_dir_from_environment(tmp_path):
    env = dict(os.environ, COREJAX_CACHE_DIR=str(tmp_path / "c"), PYTHONPATH=ROOT)
    code = "import corejax; print(corejax.config.cache_dir)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.stdout.strip() == str(tmp_path / "c")


def test_unwritable_cache_compiles_in_memory_with_one_warning(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    code = textwrap.dedent("""
        import json, warnings
        import corejax as jax, corejax.numpy as jnp
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = jax.jit(lambda x: jnp.sum(jnp.exp(x) * 3.0 - x, axis=0))(jnp.ones((4, 3)))
            b = jax.jit(lambda x: jnp.tanh(x) * 2.0)(jnp.ones(3))
        print(json.dumps({"warnings": [str(x.message) for x in w],
                          "a": [float(v) for v in a], "b": [float(v) for v in b]}))
    """)
    env = dict(os.environ, COREJAX_CACHE_DIR=str(blocker / "cache"), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out["warnings"]) == 1 and "compiled in memory" in out["warnings"][0]
    reference = _child(tmp_path / "writable")["out"]
    assert out["a"] == reference                          # the same kernels, the same bits
    assert out["b"] == pytest.approx([2 * np.tanh(1.0)] * 3, rel=1e-6)


def test_cache_size_limit_evicts_least_recently_used_and_the_command(tmp_path, capsys):
    _child(tmp_path)
    kdir = tmp_path / "kernels"
    sources = sorted(kdir.glob("k_*.py"))
    assert sources
    old = sources[0]
    os.utime(old, (1, 1))                                  # the least recently used
    info = diskcache.describe(str(tmp_path))
    assert info["kernels"] == len(sources) and info["bytes"] > 0
    removed = diskcache.evict(str(kdir), info["bytes"] - 1)
    assert removed >= 1 and not old.exists()
    assert not list((kdir / "__pycache__").glob(old.stem + ".*"))
    assert diskcache.main(["--cache-dir", str(tmp_path)]) == 0
    assert "kernels" in capsys.readouterr().out
    assert diskcache.main(["--cache-dir", str(tmp_path), "--clear"]) == 0
    assert diskcache.describe(str(tmp_path))["kernels"] == 0


def test_kernel_stats_counts():
    stats = kernel_stats()
    assert set(stats) >= {"kernels_compiled", "kernels_loaded", "rebuilt"}


# --- scalar lowering corner cases ------------------------------------------------------------

def test_unsigned_and_shift_lowerings_match_reference():
    x = jnp.array([0, 1, 2**31 - 1, 2**32 - 1, 12345], dtype=jnp.uint32)
    s = jnp.array([0, 1, 31, 32, 5], dtype=jnp.uint32)
    for f in (lax.shift_right_logical, lax.shift_left, lax.shift_right_arithmetic,
              lambda a, b: lax.div(a, b + 1), lambda a, b: lax.rem(a, b + 1), lax.max):
        closed = staged(f, x, s)
        ref = compile_jaxpr(closed, "reference")(x, s)[0]
        got = compile_jaxpr(closed, "cpu")(x, s)[0]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


def test_transposed_matrix_product_is_swapped():
    def f(a, b):
        return jnp.transpose(a @ b) * 2.0

    a, b = jnp.arange(6.0).reshape(2, 3), jnp.arange(12.0).reshape(3, 4)
    closed = staged(f, a, b)
    assert "transpose" not in prims(passes.run_passes(closed))
    run_both(closed, a, b)
    g = jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w)))
    np.testing.assert_allclose(jax.jit(g)(b, a), g(b, a), rtol=1e-5)


def test_products_read_through_transposes():
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.standard_normal((5, 3)).astype(np.float32))
    b = jnp.asarray(rng.standard_normal((4, 5)).astype(np.float32))
    c = jnp.asarray(rng.standard_normal((2, 3, 5)).astype(np.float32))
    d = jnp.asarray(rng.standard_normal((2, 3, 4)).astype(np.float32))
    cases = [
        (lambda a, b: a.T @ b.T, (a, b), True),
        # batched: transpose of the batch and contracting dimensions, free dimension last
        (lambda c, d: jnp.einsum("bij,bjk->bik", jnp.transpose(c, (0, 2, 1)), d), (c, d), True),
        # a transpose that reorders the free dimensions stays
        (lambda d, a: lax.dot_general(jnp.transpose(d, (2, 1, 0)), a, (((1,), (1,)), ((), ()))),
         (d, a), False),
    ]
    for f, args, folded in cases:
        closed = staged(f, *args)
        assert ("transpose" not in prims(passes.run_passes(closed))) == folded
        run_both(closed, *args)
    # the gradient of an MLP layer transposes its cotangents: the CPU plan has no transpose
    grad = jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w)))
    assert "host step transpose" not in jax.jit(grad).lower(b.T, a.T).as_text()
    np.testing.assert_allclose(jax.jit(grad)(b.T, a.T), grad(b.T, a.T), rtol=1e-5)


def test_cheap_intermediate_is_recomputed_not_materialized():
    def norm(x):
        m = jnp.mean(x, axis=1, keepdims=True)
        return (x - m) / jnp.std(x, axis=1, keepdims=True)

    x = jnp.asarray(np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32))
    steps = _groups(norm, x)
    groups = [s for s in steps if isinstance(s, FusedGroup)]
    # Every full-size (6, 5) group writes at most the final result: x - mean is recomputed.
    for g in groups:
        if g.shape == (6, 5):
            assert all(o.aval.shape != (6, 5) for o in g.outputs) or g is groups[-1]
    assert len(groups[-1].outputs) == 1
    run_both(staged(norm, x), x)


def test_two_processes_compiling_at_once(tmp_path):
    env = dict(os.environ, COREJAX_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert _child(tmp_path)["kernels_compiled"] == 0


def test_every_core_primitive_has_a_lowering():
    from corejax.core import Primitive
    from corejax.compiler import registry
    from corejax.lax import dot, elementwise, reductions, structural
    missing = [f"{mod.__name__}.{name}" for mod in (elementwise, structural, reductions, dot)
               for name, p in vars(mod).items()
               if isinstance(p, Primitive) and p not in registry.elementwise_lowerings
               and p not in registry.kernel_lowerings]
    assert not missing, missing


def test_prod_reduction_is_fused():
    f = jax.jit(lambda x: jnp.prod(x * 0.5 + 1.0, axis=1))
    x = jnp.asarray(np.random.default_rng(2).uniform(-1, 1, (4, 6)).astype(np.float32))
    assert "reduce_prod" in f.lower(x).as_text().split("# kernel")[0].split("plan:")[1]
    np.testing.assert_allclose(f(x), np.prod(np.asarray(x) * 0.5 + 1.0, axis=1), rtol=1e-5)


def test_uncachable_kernel_warns():
    import warnings as _w
    from numba import njit

    @njit
    def kernel(n0):
        return n0

    class Warns:
        """Stands in for a dispatcher whose compile reports Numba's cannot-cache warning."""
        overloads = kernel.overloads
        stats = kernel.stats

        def compile(self, sig):
            _w.warn("Cannot cache compiled function \"kernel\" as it uses dynamic globals")
            return kernel.compile(sig)

    with pytest.warns(diskcache.CacheWarning, match="cannot be cached"):
        fn = diskcache._compile(Warns(), (diskcache.types.int64,))
    assert fn(5) == 5


def test_pooled_buffers_under_concurrent_calls():
    import threading
    f = jax.jit(lambda x, c: jnp.tanh(x) * 0.0 + c)
    x = jnp.ones(40_000)
    errors = []

    def worker(c):
        try:
            for _ in range(30):
                out = f(x, jnp.float32(c))
                if not np.all(np.asarray(out) == c):
                    errors.append(c)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(float(i),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_parallel_kernels(monkeypatch):
    from corejax.compiler import codegen
    monkeypatch.setattr(codegen, "PARALLEL_MIN", 16)

    def f(x):
        return jnp.sum(jnp.exp(x) * 2.0, axis=1), x * 3.0

    x = jnp.asarray(np.random.default_rng(3).standard_normal((8, 5)).astype(np.float32))
    text = jax.jit(f).lower(x).as_text()
    assert "prange(n0)" in text and "parallel=True" in text
    got = jax.jit(f)(x)
    np.testing.assert_allclose(got[0], np.sum(np.exp(np.asarray(x)) * 2, axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.asarray(x) * 3, rtol=1e-6)


def test_transposed_operands_are_read_in_place():
    def f(x, y):
        return jnp.tanh(jnp.transpose(x, (2, 0, 1))) + y[None, :, :1]

    x = jnp.asarray(np.random.default_rng(4).standard_normal((3, 4, 5)).astype(np.float32))
    y = jnp.asarray(np.random.default_rng(5).standard_normal((3, 2)).astype(np.float32))
    text = jax.jit(f).lower(x, y).as_text()
    assert "host step transpose" not in text
    run_both(staged(f, x, y), x, y)
    g = jax.vmap(lambda a: jnp.exp(a) * 2.0, in_axes=1)
    run_both(staged(g, x), x)


def test_group_without_scalar_lowering_runs_on_host(monkeypatch):
    from corejax.compiler import registry
    from corejax.lax import elementwise

    def no_lowering(ctx, x):
        raise NotImplementedError("no kernel for this one")

    monkeypatch.setitem(registry.elementwise_lowerings, elementwise.sin_p, no_lowering)
    f = jax.jit(lambda x, r: jnp.sin(x * r[None, :]) + jnp.arange(3.0))
    x, r = jnp.ones((2, 3)), jnp.arange(3.0)
    assert "host-evaluated group" in f.lower(x, r).as_text()
    want = np.broadcast_to(np.sin(np.arange(3.0)) + np.arange(3.0), (2, 3))
    np.testing.assert_allclose(f(x, r), want, rtol=1e-6)


def _gemm_operands(rng, m, k, n, lhs_t, rhs_t, dt=np.float32):
    """(m, k) and (k, n) operands of dt, transposed C arrays where asked."""
    a = rng.standard_normal((k, m) if lhs_t else (m, k)).astype(dt)
    b = rng.standard_normal((n, k) if rhs_t else (k, n)).astype(dt)
    return (a.T if lhs_t else a), (b.T if rhs_t else b)


def _openblas_dtype():
    """The dtype whose products OpenBLAS runs here (float32's run in corejax's own GEMM,
    compiler/sgemm.py, unless COREJAX_SGEMM=openblas): the plans and blocks under test."""
    from corejax.compiler import blas
    return np.float64 if blas.own_kernel(np.float32) else np.float32


def _in_each_mode(site, run) -> list:
    """run() with the site forced onto OpenBLAS's threads, one thread, threads, one thread."""
    results = []
    for mode in (0, 1, 0, 1):
        site.seconds = [1.0, 2.0] if mode == 0 else [2.0, 1.0]
        site.next_trial = site.calls + 100
        site.spare_trials = False        # no trial of the threads for an idle core either
        assert site.mode() == mode
        results.append(run())
    return results


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("lhs_t,rhs_t", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (784, 128, 512), (96, 512, 10),
                                   (64, 1500, 96)])
def test_gemm_gives_the_same_bits_on_one_thread_and_on_all(m, k, n, lhs_t, rhs_t, dt, x64):
    from corejax.compiler import blas
    if blas._adaptive is None:
        pytest.skip("no adaptive BLAS threading here (no OpenBLAS, or one thread)")
    a, b = _gemm_operands(np.random.default_rng(0), m, k, n, lhs_t, rhs_t, dt)
    site = gemm_sites.GemmSite()

    def run():
        out = np.full((m, n), np.nan, dt)
        blas.matmul(a, b, out, site)
        return out

    results = _in_each_mode(site, run)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(results[0], exact, rtol=1e-4, atol=1e-4 * np.abs(exact).max())
    if blas.own_kernel(dt):
        assert site.plan is None        # (no plan to learn: the own GEMM's bits are fixed)
    elif isinstance(site.plan, blas.Blocks):
        # no plan passed: fixed blocks of the output, each on one thread, cover it in order
        bounds = site.plan.bounds
        assert bounds == blas.blocks_for(m, k, n).bounds and len(bounds) >= 3
        assert bounds[0] == 0 and bounds[-1] == (m, n)[site.plan.axis]
        assert list(bounds) == sorted(set(bounds))
    elif not blas._small(m, k, n):
        for bounds in site.plan:
            assert bounds[0] == 0 and bounds[-1] == k and list(bounds) == sorted(bounds)
    f = jax.jit(lambda x, y: x @ y)
    np.testing.assert_array_equal(np.asarray(f(a, b)), results[0])


@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (784, 128, 512), (300, 200, 100),
                                   (8, 600, 64), (2048, 64, 40), (25088, 288, 64)])
def test_blocks_are_a_function_of_the_shape(m, k, n):
    """gemm_blocks.blocks_for: the longer side of the output (columns on a tie) in blocks of
    about BLOCK, MIN_BLOCKS to MAX_BLOCKS of them, cut at multiples of BLOCK_ALIGN; a product
    of fewer flops than BLOCK_MIN_FLOPS is one block."""
    from corejax.compiler import gemm_blocks
    blocks = gemm_blocks.blocks_for(m, k, n)
    side = (m, n)[blocks.axis]
    assert side == max(m, n) and (blocks.axis == 1) == (n >= m)
    bounds = blocks.bounds
    assert bounds[0] == 0 and bounds[-1] == side and list(bounds) == sorted(set(bounds))
    if 2 * m * k * n < gemm_blocks.BLOCK_MIN_FLOPS:
        assert bounds == (0, side)
    else:
        assert len(bounds) - 1 == max(gemm_blocks.MIN_BLOCKS,
                                      min(gemm_blocks.MAX_BLOCKS, -(-side // gemm_blocks.BLOCK)))
        assert all(b % gemm_blocks.BLOCK_ALIGN == 0 for b in bounds[1:-1])


@pytest.mark.parametrize("lhs_t,rhs_t", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (784, 128, 512), (300, 300, 100)])
def test_blocks_give_one_set_of_bits_however_they_run(m, k, n, lhs_t, rhs_t, x64):
    """A product in blocks (blas.Blocks: where no plan has the threaded bits on one thread),
    each block one gemm on one OpenBLAS thread, has one set of bits whether the blocks are
    claimed by this thread and the helpers in compiled code or run in order from Python
    (np.matmul per block, as when the helpers are held by another job), as a product and
    accumulating (c += alpha a @ b); eagerly and under jit where it is the product's way."""
    from corejax.compiler import blas
    ad, dt = blas._adaptive, _openblas_dtype()
    if ad is None or blas.gemm_symbol(dt) is None:
        pytest.skip("no OpenBLAS thread control or callable gemm here: no blocks")
    rng = np.random.default_rng(m + k + n)
    a, b = _gemm_operands(rng, m, k, n, lhs_t, rhs_t, dt)
    blocks = blas.blocks_for(m, k, n)
    assert len(blocks.bounds) >= 3
    c0 = rng.standard_normal((m, n)).astype(dt)
    got = {}
    for alpha in (None, -0.5):
        for parallel in (True, False):
            out = np.full((m, n), np.nan, dt) if alpha is None else c0.copy()
            with ad.lock:
                if parallel:
                    ad._run_blocks(a, b, out, blocks, alpha, True)
                else:
                    ad.on_threads(1, lambda: ad._run_blocks(a, b, out, blocks, alpha, False))
            got[alpha, parallel] = out
        np.testing.assert_array_equal(got[alpha, True], got[alpha, False])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got[None, True], exact, rtol=1e-4,
                               atol=1e-4 * np.abs(exact).max())
    np.testing.assert_allclose(got[-0.5, True], c0 - 0.5 * exact, rtol=1e-4,
                               atol=1e-4 * np.abs(exact).max())
    with ad.lock:
        way = ad.plan(m, k, n, lhs_t, rhs_t, np.dtype(dt))
    if isinstance(way, blas.Blocks):
        assert way == blocks
        np.testing.assert_array_equal(blas.matmul(a, b), got[None, True])
        np.testing.assert_array_equal(np.asarray(jnp.asarray(a) @ jnp.asarray(b)),
                                      got[None, True])
        f = jax.jit(lambda x, y: x @ y)
        np.testing.assert_array_equal(np.asarray(f(a, b)), got[None, True])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 64, 32, 48), (3, 256, 512, 256)])
def test_batched_products_run_each_element_whole_on_one_thread(shape, dt, x64):
    """blas.batched_matmul, eagerly and under jit: each element's product whole on one
    OpenBLAS thread, or in the own float32 GEMM (the batch shared out over the cores),
    whatever the batch's size: each element's bits are its 2-D product's."""
    from corejax.compiler import blas
    batch, m, k, n = shape
    rng = np.random.default_rng(batch)
    a = rng.standard_normal((batch, m, k)).astype(dt)
    b = rng.standard_normal((batch, k, n)).astype(dt)
    if blas.own_kernel(dt):
        want = np.stack([blas.matmul(x, y) for x, y in zip(a, b)])
        np.testing.assert_allclose(want, np.matmul(a.astype(np.float64), b), rtol=1e-4,
                                   atol=1e-4 * np.sqrt(k))
    elif blas._adaptive is None:
        want = np.matmul(a, b)
    else:
        with blas._adaptive.lock:
            want = blas._adaptive.on_threads(
                1, lambda: np.stack([np.matmul(x, y) for x, y in zip(a, b)]))
    np.testing.assert_array_equal(blas.batched_matmul(a, b), want)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(a) @ jnp.asarray(b)), want)
    np.testing.assert_array_equal(np.asarray(jax.jit(jnp.matmul)(a, b)), want)
    # a transposed operand is copied first: the same bits
    bt = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    np.testing.assert_array_equal(blas.batched_matmul(a, bt), want)


@pytest.mark.parametrize("lhs_t,rhs_t", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("m,k,n", [(784, 128, 512), (128, 784, 512), (512, 128, 10)])
def test_accumulating_gemm_gives_the_same_bits_on_one_thread_and_on_all(m, k, n, lhs_t, rhs_t):
    """blas.accumulate (c += alpha a @ b, beta = 1 GEMMs over the planned reduction chunks):
    the SGD update fused into the weight-gradient GEMM."""
    from corejax.compiler import blas
    if blas.gemm_symbol(np.float32) is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS corejax can call directly")
    rng = np.random.default_rng(1)
    a, b = _gemm_operands(rng, m, k, n, lhs_t, rhs_t)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    site = gemm_sites.GemmSite()

    def run():
        c = c0.copy()
        blas.accumulate(a, b, c, -0.01, site)
        return c

    results = _in_each_mode(site, run)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    exact = c0 - 0.01 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(results[0], exact, rtol=1e-5, atol=1e-5)


def test_plan_search_prefers_the_whole_reduction_on_the_threads():
    """_AdaptiveBlas.first_agreeing on a stand-in BLAS whose results depend on the thread
    count and the chunks as given: the whole reduction on the threads with the fewest
    one-thread chunks that match it, else the fewest chunks that match on both, else none."""
    from corejax.compiler import blas
    threads = {"now": 2}
    adaptive = blas._AdaptiveBlas((lambda: 2, lambda t: threads.update(now=t)))
    k = 96
    splits = [tuple(k * i // p for i in range(p + 1)) for p in (1, 2, 3, 4)]

    def search(result):
        calls = []

        def run(bounds):
            calls.append((threads["now"], bounds))
            return np.array([result(threads["now"], len(bounds) - 1)], np.float32)

        plan = adaptive.first_agreeing(run, splits)
        assert threads["now"] == 2              # the thread count is restored
        return plan, calls

    plan, calls = search(lambda t, parts: 1.0)
    assert plan == blas.Plan.whole(k) and calls == [(2, (0, k)), (1, (0, k))]
    # the threaded driver blocks the reduction as two chunks do on one thread
    plan, _ = search(lambda t, parts: 2.0 if (t, parts) in ((2, 1), (1, 2)) else float(parts))
    assert plan == blas.Plan((0, k), (0, k // 2, k))
    # nothing matches the whole threaded reduction; three chunks agree on both
    plan, _ = search(lambda t, parts: 3.0 if parts == 3 else t * 10.0 + parts)
    assert plan == blas.Plan(splits[2], splits[2])
    plan, _ = search(lambda t, parts: t * 10.0 + parts)
    assert plan == ()


def _drive(site, speed, calls) -> list:
    """`calls` calls of a GEMM site whose modes take `speed[mode]` seconds: the modes run."""
    modes = []
    for _ in range(calls):
        mode = site.mode()
        modes.append(mode)
        site.record(mode, speed[mode])
    return modes


class _Spare:
    """A stand-in for gemm_sites._spare_cores: whether the machine has a core to spare."""

    def __init__(self):
        self.now, self.asked = False, 0

    def seen(self, site):
        self.asked += 1
        return self.now


def test_gemm_site_measures_both_modes_then_runs_the_faster_with_rare_trials(monkeypatch):
    from corejax.compiler.gemm_sites import GemmSite
    monkeypatch.setattr(gemm_sites, "_spare_cores", _Spare())     # another process keeps a core
    site = GemmSite()
    speed = {0: 1.0, 1: 2.0}                 # threads twice as fast as one thread
    modes = _drive(site, speed, 3000)
    assert modes[:2] == [0, 1]
    trials = [i for i, m in enumerate(modes) if m == 1][1:]
    assert 1 <= len(trials) <= 12                      # intervals grow to MAX_INTERVAL
    assert np.diff(trials).min() >= GemmSite.MIN_INTERVAL
    assert trials[-1] - trials[-2] == GemmSite.MAX_INTERVAL + 1
    # another process takes a core: threaded calls now take 10x; a few calls flip the choice
    speed[0] = 10.0
    modes = _drive(site, speed, 3000)
    first_single = modes.index(1)
    assert first_single <= 6
    assert site.choice() == 1
    # a trial of threads comes back soon after the flip, then (each one costly) ever rarer
    trials = [i for i, m in enumerate(modes) if m == 0 and i > first_single]
    assert trials[0] - first_single <= GemmSite.MIN_INTERVAL
    gaps = np.diff(trials)
    assert len(trials) <= 8 and np.all(np.diff(gaps) > 0)
    assert gaps[-1] == GemmSite.MAX_INTERVAL + 1
    # the core is free again: the next trial finds threads faster and the choice returns
    speed[0] = 1.0
    _drive(site, speed, GemmSite.MAX_INTERVAL + 1)
    assert site.choice() == 0


def test_gemm_site_tries_the_threads_again_as_soon_as_a_contention_ends(monkeypatch):
    """On one thread since another process took a core, a site runs a trial of the threads
    the first time the machine has a core to spare, not MAX_INTERVAL calls later; a site
    whose single thread is the faster even then stops asking."""
    from corejax.compiler.gemm_sites import GemmSite
    spare = _Spare()
    monkeypatch.setattr(gemm_sites, "_spare_cores", spare)
    site = GemmSite()
    speed = {0: 1.0, 1: 2.0}
    _drive(site, speed, 200)
    assert site.choice() == 0 and spare.asked == 0       # never asked while threads win
    speed[0] = 10.0                                       # contention
    _drive(site, speed, GemmSite.MIN_INTERVAL * 4)
    assert site.choice() == 1
    _drive(site, speed, 2000)                             # long contention: rare trials
    assert site.choice() == 1 and site.interval == GemmSite.MAX_INTERVAL
    speed[0], spare.now = 1.0, True                       # it ends; a core is idle
    assert _drive(site, speed, 2) == [0, 0] and site.choice() == 0
    # one thread faster even with a spare core: one trial of the threads, then none
    site, spare.now = GemmSite(), False
    speed = {0: 2.0, 1: 1.0}
    _drive(site, speed, 20)
    assert site.choice() == 1
    spare.now = True
    modes = _drive(site, speed, GemmSite.MIN_INTERVAL * 8)
    assert site.choice() == 1 and not site.spare_trials
    scheduled = site.next_trial
    assert modes.count(0) <= 3 and scheduled > site.calls


def test_spare_cores_reads_idle_time_once_a_period(tmp_path, monkeypatch):
    from corejax.compiler import blas
    stat = tmp_path / "stat"

    def write(idle, busy):
        # user nice system idle iowait irq softirq steal guest guest_nice
        stat.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\n"
                        "cpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\nintr 0\n")

    clock = [100.0]
    monkeypatch.setattr(blas.time, "perf_counter", lambda: clock[0])
    write(0, 0)
    spare = gemm_sites._SpareCores(str(stat))
    a, b = gemm_sites.GemmSite(), gemm_sites.GemmSite()
    assert not spare.seen(a)                      # first sample: nothing to compare yet
    clock[0] += 1.0
    write(10, 190)                                # 5% idle of 2 cpus: 0.1 core spare
    assert not spare.seen(a)
    clock[0] += 1.0
    write(110, 290)                               # 50% idle: a whole core spare
    assert spare.seen(a) and spare.seen(b)        # told once per site
    assert not spare.seen(a) and not spare.seen(b)
    clock[0] += gemm_sites._SpareCores.PERIOD / 2       # within the period: not sampled again
    write(1110, 290)
    assert not spare.seen(a)
    assert not gemm_sites._SpareCores(str(tmp_path / "missing")).seen(a)


def _mlp_grad_program(rng, sizes=(24, 40, 40, 3), batch=16):
    ws = [jnp.asarray((rng.standard_normal((m, n)) * 0.3).astype(np.float32))
          for m, n in zip(sizes[:-1], sizes[1:])]
    x = jnp.asarray(rng.standard_normal((batch, sizes[0])).astype(np.float32))

    def loss(ws, x):
        h = x
        for w in ws[:-1]:
            h = jnp.maximum(h @ w, 0.0)
        return -jnp.mean(jax.nn.log_softmax(h @ ws[-1]))

    return staged(jax.grad(loss), ws, x), (*ws, x)


def test_wide_products_are_stored_transposed_and_their_groups_follow():
    closed, args = _mlp_grad_program(np.random.default_rng(7))
    exe = compile_jaxpr(closed, "cpu")
    text = exe.as_text()
    # (16, 40) products (fewer rows than columns) are written transposed; the relus over
    # them and their backward masks iterate column by column, in place where they were
    assert "(stored transposed)" in text and "column by column" in text
    assert "f32[16,40] (stored transposed)" in text
    assert "f32[16,3] (stored transposed)" not in text        # more rows than columns
    got = run_both(closed, *args)
    # program outputs stay row-major, as callers expect
    assert all(np.asarray(g).flags.c_contiguous for g in got)


def test_transposed_layouts_change_only_rounding(monkeypatch):
    from corejax.compiler import cpu
    closed, args = _mlp_grad_program(np.random.default_rng(8), sizes=(30, 64, 48, 5), batch=8)
    with_layouts = compile_jaxpr(closed, "cpu")(*args)
    monkeypatch.setattr(cpu, "_layouts", lambda *a: ({}, {}))
    row_major = compile_jaxpr(closed, "cpu")(*args)
    for a, b in zip(with_layouts, row_major):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


def test_transposed_values_read_by_row_major_groups_and_reductions():
    rng = np.random.default_rng(9)
    a = jnp.asarray(rng.standard_normal((6, 4)).astype(np.float32))
    b = jnp.asarray(rng.standard_normal((4, 10)).astype(np.float32))
    c = jnp.asarray(rng.standard_normal((6, 10)).astype(np.float32))

    def f(a, b, c):
        p = a @ b                           # stored transposed: (6, 10)
        q = jnp.tanh(p) + c                 # one transposed and one row-major input
        return q, jnp.sum(jnp.exp(p), axis=0), jnp.sum(p * 2.0, axis=1), (q @ b.T).sum()

    closed = staged(f, a, b, c)
    exe = compile_jaxpr(closed, "cpu")
    assert any(v.aval.shape == (6, 10) for v in exe._layout)
    got = run_both(closed, a, b, c)
    assert np.asarray(got[0]).flags.c_contiguous
    # a dying transposed product is no buffer for a row-major group's result to go into
    g = staged(lambda a, b, c: (jnp.tanh(a @ b) + c) * 2.0, a, b, c)
    assert "in place" not in compile_jaxpr(g, "cpu").as_text()
    run_both(g, a, b, c)


def test_transposed_values_enter_loops():
    rng = np.random.default_rng(11)
    x = jnp.asarray(rng.standard_normal((8, 30)).astype(np.float32))
    w = jnp.asarray((rng.standard_normal((30, 64)) / 8).astype(np.float32))
    u = jnp.asarray((rng.standard_normal((64, 64)) / 8).astype(np.float32))

    def f(x, w, u):
        h = lax.fori_loop(0, 3, lambda i, v: jnp.tanh(v @ u) + v * 0.5, x @ w)
        total, rows = lax.scan(lambda c, row: (c + row.sum(), row * 2.0), 0.0, x @ w)
        return h * 2.0, total, rows

    closed = staged(f, x, w, u)
    assert "(stored transposed)" in compile_jaxpr(closed, "cpu").as_text()
    run_both(closed, x, w, u)


def test_reduction_iterated_out_of_its_kept_order_is_not_generated():
    from corejax.compiler import codegen
    x = jnp.ones((2, 3, 4), jnp.float32)
    group, = [s for s in _groups(lambda x: jnp.sum(jnp.exp(x), axis=1), x)
              if isinstance(s, FusedGroup)]
    assert "for i0" in codegen.generate(group, order=(1, 0, 2)).source
    with pytest.raises(NotImplementedError, match="out of order"):
        codegen.generate(group, order=(2, 1, 0))


def test_host_evaluated_group_keeps_a_transposed_layout(monkeypatch):
    from corejax.compiler import registry
    from corejax.lax import elementwise

    def no_lowering(ctx, x):
        raise NotImplementedError("no kernel for this one")

    monkeypatch.setitem(registry.elementwise_lowerings, elementwise.sin_p, no_lowering)
    rng = np.random.default_rng(10)
    a = jnp.asarray(rng.standard_normal((4, 6)).astype(np.float32))
    b = jnp.asarray(rng.standard_normal((6, 12)).astype(np.float32))
    c = jnp.asarray(rng.standard_normal((12, 12)).astype(np.float32))

    def f(a, b, c):
        h = jnp.sin(a @ b)                  # on the host, over a transposed product
        return jnp.maximum(h @ c, 0.0) * 3.0, jnp.sum(h, axis=0)

    closed = staged(f, a, b, c)
    text = compile_jaxpr(closed, "cpu").as_text()
    assert "host-evaluated group" in text and "(stored transposed)" in text
    run_both(closed, a, b, c)


@pytest.mark.parametrize("rows", [1024, 3, 0])
def test_big_groups_choose_threads_by_measurement_with_the_same_bits(rows, monkeypatch):
    """A group of ADAPTIVE_MIN elements or more gets a second kernel over a part of its outer
    loop, run in parts by this thread and helper threads; its call site runs whichever way it
    measures faster. Both write the same bits, including a row reduction (each row still
    summed by one thread, in order). rows=0: one dimension, cut at 64-element multiples."""
    from corejax.compiler import codegen, eager_threads
    # (every call recorded, whether or not it found the helpers spinning)
    monkeypatch.setattr(eager_threads, "helpers_awake", lambda: True)

    def f(x):
        y = 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)
        return (y, jnp.sum(y * y, axis=1)) if x.ndim == 2 else (y, y * y)
    shape = (rows, codegen.ADAPTIVE_MIN // rows + 3) if rows else (codegen.ADAPTIVE_MIN + 37,)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    closed = jax.make_jaxpr(f)(x)
    exe = compile_jaxpr(closed, "cpu")
    if usable_cores() < 2:
        assert not exe.thread_sites
        return
    assert len(exe.thread_sites) >= 1
    results = []
    for mode in (0, 1, 0, 1):
        for site in exe.thread_sites.values():
            site.seconds = [1.0, 2.0] if mode == 0 else [2.0, 1.0]
            site.next_trial, site.spare_trials = 10 ** 9, False
        results.append([np.asarray(r) for r in exe(x)])
        assert all(site.calls > 0 for site in exe.thread_sites.values())
    for got in results[1:]:
        for a, b in zip(results[0], got):
            np.testing.assert_array_equal(a, b)
    want = f(x)
    np.testing.assert_allclose(results[0][0], np.asarray(want[0]), rtol=1e-6)
    np.testing.assert_allclose(results[0][1], np.asarray(want[1]), rtol=1e-5)
    # groups below the threshold get no second kernel
    small = compile_jaxpr(jax.make_jaxpr(f)(x[:2]), "cpu")
    assert not small.thread_sites

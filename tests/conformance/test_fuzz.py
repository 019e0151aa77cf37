"""The composition fuzzer: random stacks of transformations over idioms of real code, run under
corejax and compared with what real JAX computed for the same program (issue #24).

Each seed names one program (`fuzz_programs.program_source(seed)`: Python source text, built
against whichever `jax, jnp, lax` it is given). The committed seeds' JAX results are in
golden_fuzz.npz (made by gen_fuzz.py under real JAX). Values are compared with float32
tolerances; dtypes, shapes and the number of outputs exactly; where JAX raises, corejax must
raise an exception of the same class (or one with JAX's builtin base, e.g. TypeError).

A failure prints the seed and the whole program text: paste it into a file, exec it, and call
`f, args = build(jax, jnp, lax); f(*args)` under either framework.

More seeds: `COREJAX_FUZZ_SEEDS=<n>` adds n seeds after the committed ones, whose JAX results
are computed live by running gen_fuzz.py in a subprocess of the Python named by
`COREJAX_JAX_PYTHON` (one with real JAX installed; this project never imports jax).
`COREJAX_FUZZ_START=<s>` starts those seeds at s instead.
"""
from __future__ import annotations

import builtins
import json
import os
import subprocess
import tempfile
import traceback

import numpy as np
import pytest

import corejax as jax
import corejax.numpy as jnp
import corejax.scipy.special  # noqa: F401 - the programs use jax.scipy.special.logsumexp
from corejax import lax

import fuzz_programs as fp  # this folder is on sys.path under pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden_fuzz.npz")

RTOL = 2e-5
ATOL = 1e-6       # times max(1, max |expected|) of the output
ROUNDING = 4.0    # times |JAX float32 - JAX float64| of the element (gen_fuzz.py)

# seed -> reason: a known corejax bug (listed in the note on issue #24). strict: the test turns
# red when the bug is fixed, so the entry is removed then.
KNOWN_FAILURES: dict[int, str] = {}


def _load_golden(path):
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if k != "meta"}
    return meta, arrays


_META, _ARRAYS = _load_golden(GOLDEN)
COMMITTED = sorted(int(s) for s in _META["seeds"])


def _extra_seeds():
    n = int(os.environ.get("COREJAX_FUZZ_SEEDS", "0") or 0)
    start = os.environ.get("COREJAX_FUZZ_START")
    start = int(start) if start else max(COMMITTED, default=-1) + 1
    return list(range(start, start + n))


EXTRA = _extra_seeds()


@pytest.fixture(scope="session")
def live_golden():
    """JAX's results for the EXTRA seeds, computed now by gen_fuzz.py under COREJAX_JAX_PYTHON."""
    python = os.environ.get("COREJAX_JAX_PYTHON")
    if not python:
        pytest.skip("COREJAX_FUZZ_SEEDS needs COREJAX_JAX_PYTHON: the path of a Python with "
                    "real JAX installed (e.g. /work/jaxvenv/bin/python), which computes the "
                    "expected results live")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "live.npz")
        cmd = [python, os.path.join(HERE, "gen_fuzz.py"), "--start", str(EXTRA[0]),
               "--seeds", str(len(EXTRA)), "--jobs", str(os.cpu_count() or 1), "--out", out]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            _fail(f"{' '.join(cmd)} failed:\n{proc.stderr[-4000:]}")
        return _load_golden(out)


def _params(seeds):
    out = []
    for s in seeds:
        marks = ()
        if s in KNOWN_FAILURES:
            marks = pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[s])
        out.append(pytest.param(s, marks=marks, id=f"seed{s}"))
    return out


def _describe(seed, src, msg):
    return (f"fuzz seed {seed}: {msg}\n"
            f"--- program (exec it, then `f, args = build(jax, jnp, lax); f(*args)`) ---\n"
            f"{src}---")


def _fail(msg):
    pytest.fail(msg, pytrace=False)


def check_seed(seed, meta, arrays):
    __tracebackhide__ = True
    src = fp.program_source(seed)
    entry = meta["seeds"][str(seed)]
    if entry["hash"] != fp.source_hash(src):
        _fail(f"fuzz seed {seed}: golden is stale (fuzz_programs.py changed since it was "
              f"made); regenerate: /work/jaxvenv/bin/python tests/conformance/gen_fuzz.py")
    with np.errstate(all="ignore"):   # NaN / inf are legitimate results here, as in JAX
        status, res, _ = fp.run(seed, jax, jnp, lax)
    if status == "ok":
        res, weak = res
    if "error" in entry:
        expected = entry["error"]
        if status == "ok":
            _fail(_describe(seed, src, f"JAX raises {expected[0]}, corejax returned "
                            f"{[(a.dtype, a.shape) for a in res]}"))
        got = fp.exception_names(res)
        builtin = next((n for n in expected if isinstance(getattr(builtins, n, None), type)),
                       expected[0])
        if expected[0] not in got and builtin not in got:
            _fail(_describe(seed, src, f"JAX raises {expected[0]} ({builtin}), corejax "
                            f"raised {type(res).__name__}: {res}"))
        return
    if status == "error":
        tb = "".join(traceback.format_exception(type(res), res, res.__traceback__)[-8:])
        _fail(_describe(seed, src, f"JAX returns {entry['n']} outputs, corejax raised "
                        f"{type(res).__name__}: {res}\n{tb}"))
    want = [arrays[f"{seed}_{i}"] for i in range(entry["n"])]
    if len(res) != len(want):
        _fail(_describe(seed, src, f"{len(res)} outputs, JAX has {len(want)}"))
    for i, (g, w) in enumerate(zip(res, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            _fail(_describe(seed, src, f"output {i}: {g.dtype}{list(g.shape)}, JAX has "
                            f"{w.dtype}{list(w.shape)}"))
        if w.dtype.kind == "f":
            finite = np.abs(w[np.isfinite(w)])
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            # float32 rounding, as far as JAX's own float32-vs-float64 difference measures it
            rounding = arrays.get(f"e{seed}_{i}", 0.0)
            ok = np.allclose(g, w, rtol=RTOL, atol=ATOL * scale + ROUNDING * rounding,
                             equal_nan=True)
        else:
            ok = np.array_equal(g, w)
        if not ok:
            with np.printoptions(precision=8, threshold=200):
                _fail(_describe(seed, src, f"output {i} differs from JAX\n"
                                f"corejax: {g!r}\nJAX:     {w!r}"))
    # weak types last, so that a wrong value is reported as such
    for i, (gw, ww) in enumerate(zip(weak, entry["weak"])):
        if (gw is None) != (ww is None):   # None: not an Array (e.g. a Python float)
            _fail(_describe(seed, src, f"output {i}: corejax returned "
                                       f"{'an Array' if ww is None else 'a non-Array'}, JAX "
                                       f"{'a non-Array' if ww is None else 'an Array'}"))
        if ww is not None and bool(gw) != bool(ww):
            _fail(_describe(seed, src, f"output {i}: weak_type={gw}, JAX has weak_type={ww}"))


@pytest.mark.parametrize("seed", _params(COMMITTED))
def test_fuzz_committed(seed):
    check_seed(seed, _META, _ARRAYS)


if EXTRA:
    @pytest.mark.parametrize("seed", _params(EXTRA))
    def test_fuzz_live(seed, live_golden):
        check_seed(seed, *live_golden)

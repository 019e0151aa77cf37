"""The on-disk kernel cache: generated Numba source, keyed by a hash of the kernel's own source
(its IR, with shapes passed as arguments) + corejax version + Numba version + CPU features +
the source of the helper modules kernels inline (fastmath, kernel_lib).

Each kernel is a module `<cache_dir>/kernels/k_<key>.py` loaded with importlib (registered in
`sys.modules` before `exec_module`, which Numba's `cache=True` needs to find it again in the next
process); its functions are `@njit(cache=True)`, so a second process loads machine code from
Numba's cache next to the source instead of compiling. Files are written atomically (temp file
+ `os.replace`), so processes compiling at once never see half a file; a source whose checksum
does not match, or a Numba cache entry that fails to load or compile, is rebuilt.

A cache folder that cannot be written (read-only, or not creatable) is not an error: kernels
are then compiled in memory, the same code giving the same bits, with one warning per process.
The cache is kept under a size limit (config `cache_max_mb`, COREJAX_CACHE_MAX_MB, default
1024): past it, the least recently used kernels are evicted. `python -m
corejax.compiler.diskcache` shows the cache (`--clear` empties it).
"""
from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
import warnings

import numba
import numpy as np
from numba import types

import corejax
from corejax import monitoring
from corejax.config import config

__all__ = ["load_kernel", "stats", "CacheWarning", "KernelCompileError"]


class CacheWarning(UserWarning):
    """A kernel could not be cached on disk (it will be compiled again in the next process)."""


class KernelCompileError(RuntimeError):
    pass


# kernels_compiled counts Numba compilations (cache misses); kernels_loaded counts kernels
# whose machine code came from Numba's disk cache; rebuilt counts corrupted entries replaced.
stats = {"kernels_compiled": 0, "kernels_loaded": 0, "rebuilt": 0}

_lock = threading.RLock()
_kernels: dict = {}
_host_features = None

# LLVM vectorizes a loop over arrays that might overlap behind run-time checks that they do
# not, one per pair of a written and another array, and gives up past 128 checks ("loop not
# vectorized: too many memory checks needed"). A fused kernel with many outputs needs more: an
# LSTM cell's forward step keeping its residuals for the backward pass (9 inputs, 12 outputs)
# ran scalar, 813 us over 16K floats, and vectorized takes 70-80 us; the checks run once per
# call. The option is LLVM's, for the whole process (it only lets more loops vectorize), set
# before any generated kernel compiles, and part of the cache key.
LLVM_OPTIONS = ("-vectorize-memory-check-threshold=2048",)


def _set_llvm_options() -> None:
    import llvmlite.binding as ll
    for option in LLVM_OPTIONS:
        ll.set_option("corejax", option)


_set_llvm_options()


def _host_id() -> str:
    global _host_features
    if _host_features is None:
        import llvmlite.binding as ll
        try:
            feats = ll.get_host_cpu_features().flatten()
        except Exception:  # some platforms cannot report features
            feats = ""
        _host_features = f"{ll.get_host_cpu_name()}|{feats}"
    return _host_features


_runtime_digest = None


# The modules whose functions kernels call (or inline); runtime_files() adds what they import.
_RUNTIME_ROOTS = ("fastmath", "kernel_lib", "eager_threads", "eager_sums")


def runtime_files() -> list:
    """The source files of the modules kernels call functions from (the native forms of split
    loops: eager_threads' claims, eager_sums' runs; fastmath, kernel_lib) and of every corejax
    module those import at module level, following imports within corejax.compiler (so that
    splitting a module in two cannot drop a part) and taking other corejax modules' files whole
    (kernel_lib calls lax.prng's threefry, fastmath reads lax.elementwise's coefficients)."""
    import ast
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    todo = [os.path.join(here, f"{name}.py") for name in _RUNTIME_ROOTS]
    seen: list = []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        if os.path.dirname(path) != here:
            continue                    # outside the compiler: the file itself, not its imports
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:          # module-level imports (not those inside functions)
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and node.level == 0 else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("corejax."):
                    parts = name.split(".")[1:]
                    base = os.path.join(package, *parts)
                    todo += [p for p in (base + ".py", os.path.join(base, "__init__.py"))
                             if os.path.exists(p)]
    return sorted(seen)


def _runtime_id() -> str:
    """A digest of runtime_files(): Numba's cache does not notice when an inlined callee
    changes, so the kernel key must."""
    global _runtime_digest
    if _runtime_digest is None:
        h = hashlib.sha256()
        for path in runtime_files():
            h.update(os.path.relpath(path, os.path.dirname(__file__)).encode())
            with open(path, "rb") as f:
                h.update(f.read())
        _runtime_digest = h.hexdigest()
    return _runtime_digest


def kernel_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (source, corejax.__version__, numba.__version__, _host_id(), _runtime_id(),
                 *LLVM_OPTIONS):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def _atomic_write(path: str, text: str) -> None:
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _purge_numba_cache(path: str) -> None:
    stem = os.path.splitext(os.path.basename(path))[0]
    for f in glob.glob(os.path.join(os.path.dirname(path), "__pycache__", stem + ".*")):
        try:
            os.unlink(f)
        except OSError:
            pass


def _ensure_source(path: str, body: str) -> None:
    """Writes the source unless a valid copy is there (rewriting would change its mtime and
    invalidate Numba's cache entry for it)."""
    header = f"# corejax kernel sha256={_digest(body)}\n"
    try:
        with open(path) as f:
            if f.read() == header + body:
                return
        stats["rebuilt"] += 1
        _purge_numba_cache(path)
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        stats["rebuilt"] += 1
        _purge_numba_cache(path)
    _atomic_write(path, header + body)


def _import(path: str, key: str):
    name = f"corejax_kernel_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def numba_type(dtype) -> types.Type:
    return types.Array(numba.from_dtype(np.dtype(dtype)), 1, "C")


def _compile(dispatcher, sig):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dispatcher.compile(sig)
    for w in caught:
        if "cache" in str(w.message).lower():
            warnings.warn(f"corejax: a kernel cannot be cached on disk: {w.message}",
                          CacheWarning, stacklevel=4)
    cres = dispatcher.overloads[tuple(sig)]
    hits = sum(dispatcher.stats.cache_hits.values())
    stats["kernels_loaded" if hits else "kernels_compiled"] += 1
    return cres.entry_point


_unwritable_warned: set = set()


def _writable_dir(d: str) -> bool:
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK | os.X_OK)


def _in_memory(body: str, key: str, sig, entry: str):
    """The module and its `entry` compiled from source held in memory (no file, no Numba disk
    cache)."""
    module = types_module(f"corejax_kernel_mem_{key}")
    code = compile(body.replace("cache=True", "cache=False"), f"<corejax kernel {key}>", "exec")
    exec(code, module.__dict__)  # noqa: S102 (source generated by corejax's compiler)
    fn = getattr(module, entry)
    fn.compile(sig)
    stats["kernels_compiled"] += 1
    return fn.overloads[tuple(sig)].entry_point, module


def types_module(name: str):
    import types as pytypes
    return pytypes.ModuleType(name)


def load_kernel(body: str, sig) -> tuple:
    """The compiled `kernel` function of module source `body` for argument types `sig`;
    returns (callable, key)."""
    fn, key, _ = _load(body, sig, "kernel")
    return fn, key


def load_native(body: str, sig):
    """(`run` compiled for argument types `sig`, the address of `claims`) of a kernel module
    with eager_threads.native_source appended (the module is kept: the address stays valid)."""
    fn, _, module = _load(body, sig, "run")
    return fn, module.claims.address


def _load(body: str, sig, entry: str) -> tuple:
    key = kernel_key(body)
    sig = tuple(sig)
    with _lock:
        got = _kernels.get((key, sig))
        if got is not None:
            return got[0], key, got[1]
        d = os.path.join(config.cache_dir, "kernels")
        path = os.path.join(d, f"k_{key}.py")
        writable = _writable_dir(d)
        _note_cache_task(writable)
        if not writable:
            if d not in _unwritable_warned:
                _unwritable_warned.add(d)
                warnings.warn(f"corejax: the kernel cache folder {d} cannot be written; kernels "
                              "are compiled in memory and not cached (set COREJAX_CACHE_DIR to a "
                              "writable folder)", CacheWarning, stacklevel=3)
            fn, module = _in_memory(body, key, sig, entry)
            _kernels[(key, sig)] = fn, module
            return fn, key, module
        new_source = not os.path.exists(path)
        monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
        loaded_before, started = stats["kernels_loaded"], time.monotonic()
        for attempt in range(2):
            try:
                _ensure_source(path, body)
                module = _import(path, key)
                fn = _compile(getattr(module, entry), sig)
                break
            except Exception as e:  # a corrupted cache entry: purge it and build once more
                if attempt:
                    raise KernelCompileError(
                        f"Numba failed to compile a generated kernel ({type(e).__name__}: {e})."
                        f"\nSource ({path}):\n{body}") from e
                stats["rebuilt"] += 1
                _purge_numba_cache(path)
                try:
                    os.unlink(path)
                except OSError:
                    pass
        _kernels[(key, sig)] = fn, module
        if stats["kernels_loaded"] != loaded_before:
            monitoring.record_event("/jax/compilation_cache/cache_hits")
            monitoring.record_event_duration_secs(
                "/jax/compilation_cache/cache_retrieval_time_sec", time.monotonic() - started)
        else:
            monitoring.record_event("/jax/compilation_cache/cache_misses")
        if new_source:
            _note_growth(d)
        return fn, key, module


_cache_task_noted = False


def _note_cache_task(writable: bool) -> None:
    """Reports once per process whether kernels are cached on disk, as JAX reports whether
    its compilation cache is in use at its first compilation."""
    global _cache_task_noted
    if not _cache_task_noted:
        _cache_task_noted = True
        monitoring.record_event("/jax/compilation_cache/tasks_using_cache" if writable else
                                "/jax/compilation_cache/task_disabled_cache")


# --- size limit and the command line ---------------------------------------------------------

_CHECK_EVERY = 32   # new kernels between two measurements of the cache's size
_new_since_check = 0


def _entries(d: str) -> list:
    """(last use, bytes, source path) per cached kernel: its source and Numba's files."""
    out = []
    pycache = os.path.join(d, "__pycache__")
    numba_files: dict = {}
    if os.path.isdir(pycache):
        for f in os.listdir(pycache):
            numba_files.setdefault(f.split(".", 1)[0], []).append(os.path.join(pycache, f))
    for f in os.listdir(d):
        if not (f.startswith("k_") and f.endswith(".py")):
            continue
        path = os.path.join(d, f)
        try:
            st = os.stat(path)
        except OSError:
            continue
        size, used = st.st_size, max(st.st_atime, st.st_mtime)
        for extra in numba_files.get(f[:-3], ()):
            try:
                est = os.stat(extra)
                size += est.st_size
                used = max(used, est.st_atime, est.st_mtime)
            except OSError:
                pass
        out.append((used, size, path))
    return out


def _note_growth(d: str) -> None:
    global _new_since_check
    _new_since_check += 1
    if _new_since_check >= _CHECK_EVERY:
        _new_since_check = 0
        evict(d, int(config.cache_max_mb) * 2**20)


def evict(d: str, limit_bytes: int) -> int:
    """Deletes the least recently used kernels of folder `d` until it holds at most
    `limit_bytes`; returns how many were deleted. Kernels loaded in this process stay usable
    (their machine code is in memory)."""
    entries = sorted(_entries(d))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, path in entries:
        if total <= limit_bytes:
            break
        _purge_numba_cache(path)
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def describe(cache_dir: str | None = None) -> dict:
    d = os.path.join(cache_dir or config.cache_dir, "kernels")
    entries = _entries(d) if os.path.isdir(d) else []
    return {"folder": d, "kernels": len(entries), "bytes": sum(s for _, s, _ in entries),
            "limit_bytes": int(config.cache_max_mb) * 2**20}


def clear(cache_dir: str | None = None) -> int:
    """Deletes every cached kernel; returns how many."""
    d = os.path.join(cache_dir or config.cache_dir, "kernels")
    return evict(d, 0) if os.path.isdir(d) else 0


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m corejax.compiler.diskcache",
                                description="Show or clear corejax's kernel cache.")
    p.add_argument("--clear", action="store_true", help="delete every cached kernel")
    p.add_argument("--cache-dir", help="the cache folder (default: COREJAX_CACHE_DIR or "
                                       "~/.cache/corejax)")
    args = p.parse_args(argv)
    if args.clear:
        n = clear(args.cache_dir)
        print(f"deleted {n} kernels")
        return 0
    info = describe(args.cache_dir)
    print(f"kernel cache: {info['folder']}\n{info['kernels']} kernels, "
          f"{info['bytes'] / 2**20:.1f} MiB (limit {info['limit_bytes'] / 2**20:.0f} MiB; "
          "set COREJAX_CACHE_MAX_MB to change it)\nclear it with: python -m "
          "corejax.compiler.diskcache --clear")
    return 0


if __name__ == "__main__":
    sys.exit(main())

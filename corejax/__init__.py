"""corejax: JAX's programming model (grad, vmap, jit, a key-based PRNG) on a core of its own,
compiled to Numba kernels."""
import os as _os

# OpenBLAS's idle workers spin for 2**28 cycles (about 0.1 s) after each threaded GEMM before
# they sleep, and while they spin they take cores from corejax's own threads (a split fused
# kernel, a convolution's blocks): the CNN step of configs/cnn.yaml ran 43-47 ms with the
# default and 39.5-40.7 ms with 2**20 cycles (about 0.4 ms: a worker still spins across the
# short gaps between a program's GEMMs). OpenBLAS reads the variable once, when NumPy loads
# it: it applies where corejax is imported before NumPy (train.py does), and a value the user
# set is kept. docs/performance.md has the measurements.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")
from corejax.version import __version__

from corejax.config import config
from corejax import dtypes, tree_util
from corejax.array import Array, Device, device_put, device_get, block_until_ready
from corejax import lax
from corejax import numpy
from corejax.api import (jit, grad, value_and_grad, vjp, jvp, linearize, jacfwd, jacrev,
                         jacobian, hessian, vmap, make_jaxpr, eval_shape, ShapeDtypeStruct,
                         linear_transpose,
                         disable_jit)
from corejax.custom_derivatives import custom_jvp, custom_vjp, custom_gradient, closure_convert
from corejax.errors import (ConcretizationTypeError, TracerBoolConversionError,
                            TracerIntegerConversionError, TracerArrayConversionError,
                            UnexpectedTracerError)
from corejax.tree_util import tree_map, tree_leaves, tree_structure
from corejax import nn, scipy, random
from corejax import debug
from corejax import tree, typing, version, ops, dlpack, image
from corejax._fwd_bwd import fwd_and_bwd
from corejax._config_states import (enable_x64, debug_nans, threefry_partitionable,
                                    explain_cache_misses, debug_infs, log_compiles,
                                    numpy_rank_promotion, numpy_dtype_promotion,
                                    default_matmul_precision, no_tracing, no_execution,
                                    legacy_prng_key, default_prng_impl, enable_checks,
                                    check_tracer_leaks, checking_leaks, transfer_guard,
                                    transfer_guard_host_to_device,
                                    transfer_guard_device_to_host,
                                    transfer_guard_device_to_device, default_device,
                                    softmax_custom_jvp, jax2tf_associative_scan_reductions,
                                    allow_f16_reductions, array_garbage_collection_guard,
                                    thread_guard, debug_key_reuse, enable_custom_prng,
                                    remove_size_one_mesh_axis_from_type, auto_pcast)
from corejax._guards import make_user_context
from corejax._tracing import typeof, ensure_compile_time_eval, named_scope, named_call
from corejax._runtime import (devices, process_index, process_count, process_indices, host_id,
                              host_count, host_ids, local_devices, local_device_count,
                              effects_barrier, clear_caches, live_arrays, copy_to_host_async,
                              print_environment_info)
from corejax import ad_checkpoint, stages
from corejax import monitoring, profiler
from corejax.callbacks import pure_callback
from corejax import custom_batching, experimental, distributed
from corejax.ad_checkpoint import checkpoint, remat, checkpoint_policies
from corejax.ref import Ref, new_ref, empty_ref, freeze, free_ref, ds  # also binds corejax.ref
from corejax._pmap import pmap
from corejax import sharding
from corejax.sharding import (NamedSharding, PartitionSpec, Shard, make_mesh, set_mesh,
                              make_array_from_callback, make_array_from_single_device_arrays,
                              make_array_from_process_local_data)
from corejax._shard_map import shard_map
from corejax._reshard import reshard
from corejax import memory
from corejax._smap import smap
P = PartitionSpec

stop_gradient = lax.stop_gradient
float0 = dtypes.float0


def default_backend() -> str:
    return config.platform


def device_count(backend=None) -> int:
    return len(devices(backend))

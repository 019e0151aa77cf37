"""The calls tests/test_config_guards.py makes and tests/golden/gen_config_guards.py records
with JAX (on 2 CPU devices), written once for both frameworks: the transfer guards,
default_device, allow_f16_reductions and softmax_custom_jvp."""
import numpy as np


def outcome(f):
    """'ok' or 'raise:<ExceptionType>' for calling f."""
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the exception type is the outcome
        return f"raise:{type(e).__name__}"
    return "ok"


def host_to_device_cases(jax, jnp, lax):
    """Host data becoming arrays, run under each level of transfer_guard."""
    x = jnp.ones(3)
    f = jax.jit(lambda a: a + 1)
    g = jax.jit(lambda a: a + jnp.asarray(np.ones(3, np.float32)) + 2.0)
    for warm in (x, np.ones(3, np.float32), 1.0):     # compiled before the guard
        f(warm)
    return {
        "jnp_array_numpy": lambda: jnp.array(np.ones(3)),
        "jnp_asarray_numpy": lambda: jnp.asarray(np.ones(3)),
        "jnp_asarray_list": lambda: jnp.asarray([1., 2.]),
        "device_put_numpy": lambda: jax.device_put(np.ones(3)),
        "device_put_tree": lambda: jax.device_put({"a": np.ones(2), "b": np.float32(1)}),
        "jit_numpy_arg": lambda: f(np.ones(3, np.float32)),
        "jit_python_float_arg": lambda: f(1.0),
        "jit_numpy_scalar_arg": lambda: jax.jit(lambda a, b: a * b)(x, np.float32(2)),
        "jit_bool_arg": lambda: jax.jit(lambda a, b: a)(x, True),
        "jit_array_arg": lambda: f(x),
        "jit_static_arg": lambda: jax.jit(lambda a, n: a * n, static_argnums=1)(x, 3),
        "jit_constant_inside": lambda: g(x),
        "jit_grad": lambda: jax.jit(jax.grad(lambda a: (a * a).sum()))(x),
        "vmap_jit": lambda: jax.vmap(jax.jit(lambda a: a.sum()))(x[None]),
        "array_plus_numpy": lambda: x + np.ones(3, np.float32),
        "array_plus_python_int": lambda: x + 1,
        "jnp_sin_numpy": lambda: jnp.sin(np.ones(3)),
        "jnp_sin_python_float": lambda: jnp.sin(1.0),
        "jnp_add_arrays": lambda: jnp.add(x, x),
        "lax_add_numpy": lambda: lax.add(np.ones(3, np.float32), np.ones(3, np.float32)),
        "eager_grad": lambda: jax.grad(lambda a: (a * a).sum())(x),
        "numpy_asarray_of_array": lambda: np.asarray(x),
        "str_of_array": lambda: str(x),
        "device_get": lambda: jax.device_get(x),
        "tolist": lambda: x.tolist(),
        "make_jaxpr_numpy": lambda: jax.make_jaxpr(lambda a: a + 1)(np.ones(3)),
        "eval_shape_numpy": lambda: jax.eval_shape(lambda a: a + 1, np.ones(3)),
        "jit_trace_numpy": lambda: jax.jit(lambda a: a * 3).trace(np.ones(3)),
    }


def device_to_device_cases(jax, jnp):
    """Arrays moving between the 2 CPU devices, run under device_to_device levels."""
    d = jax.devices()
    x = jnp.ones(3)
    x1 = jax.device_put(jnp.ones(3), d[1])
    f = jax.jit(lambda a: a + 1)
    f(x), f(x1)
    add = jax.jit(lambda a, b: a + b)

    def under_default(fn):
        def run():
            with jax.default_device(d[1]):
                return fn()
        return run

    return {
        "device_put_to_other_device": lambda: jax.device_put(x, d[1]),
        "device_put_to_same_device": lambda: jax.device_put(x1, d[1]),
        "jit_committed_arg": lambda: f(x1),
        "committed_plus_uncommitted": lambda: x1 + x,
        "jit_committed_and_uncommitted": lambda: add(x, x1),
        "jit_uncommitted_under_default_device": under_default(lambda: f(x)),
        "eager_uncommitted_under_default_device": under_default(lambda: x * 2),
        "committed_under_default_device": under_default(lambda: x1 * 2),
    }


def default_device_cases(jax, jnp):
    """Where results land under default_device(cpu:1): (device ids, committed)."""
    d = jax.devices()
    x = jnp.ones(2)
    x1 = jax.device_put(jnp.ones(2), d[1])
    x0 = jax.device_put(jnp.ones(2), d[0])
    f = jax.jit(lambda a: a * 2)
    return {
        "ones": lambda: jnp.ones(2),
        "arange": lambda: jnp.arange(3),
        "asarray_numpy": lambda: jnp.asarray(np.ones(2)),
        "device_put_numpy": lambda: jax.device_put(np.ones(2)),
        "eager_op_on_uncommitted": lambda: x * 2,
        "eager_op_on_committed_cpu0": lambda: x0 * 2,
        "jit_on_uncommitted": lambda: f(x),
        "jit_on_numpy": lambda: f(np.ones(2)),
        "jit_on_committed_cpu1": lambda: f(x1),
        "random_normal": lambda: jax.random.normal(jax.random.key(0), (2,)),
        "grad": lambda: jax.grad(lambda a: (a * a).sum())(x),
    }


def placement(r):
    leaf = r if hasattr(r, "devices") else None
    return [sorted(dv.id for dv in leaf.devices()), bool(leaf.committed)]


def half_sum_cases(jax, jnp, lax):
    """Half-precision sums under allow_f16_reductions(False)."""
    x = jnp.ones((3, 4), jnp.float16)
    b = jnp.ones((3, 4), jnp.bfloat16)
    return {
        "jnp_sum_f16": lambda: jnp.sum(x),
        "jnp_mean_bf16": lambda: jnp.mean(b),
        "jnp_var_f16": lambda: jnp.var(x),
        "lax_reduce_add_f16": lambda: lax.reduce(x, np.float16(0), lax.add, (0,)),
        "lax_reduce_add_bf16_axis1": lambda: lax.reduce(b, np.array(0, b.dtype), lax.add, (1,)),
        "lax_reduce_add_size_one_axis": lambda: lax.reduce(jnp.ones((1, 4), jnp.float16),
                                                           np.float16(0), lax.add, (0,)),
        "lax_reduce_max_f16": lambda: lax.reduce(x, np.float16(-np.inf), lax.max, (0,)),
        "jit_lax_reduce_f16": lambda: jax.jit(
            lambda a: lax.reduce(a, np.float16(0), lax.add, (1,)))(x),
        "make_jaxpr_reduce_f16": lambda: jax.make_jaxpr(
            lambda a: lax.reduce(a, np.float16(0), lax.add, (0,)))(x),
        "grad_of_broadcast_f16": lambda: jax.grad(
            lambda a: (a * jnp.ones((3, 4), jnp.float16)).astype(jnp.float32).sum())(
                jnp.float16(1.)),
        "vmap_psum_f16": lambda: jax.vmap(lambda a: lax.psum(a, "i"), axis_name="i")(x),
        "cumsum_f16": lambda: jnp.cumsum(x),
        "matmul_f16": lambda: x @ x.T,
        "softmax_f16": lambda: jax.nn.softmax(x),
        "lax_reduce_add_f32": lambda: lax.reduce(jnp.ones(3), np.float32(0), lax.add, (0,)),
    }


def softmax_values(jax, jnp):
    """softmax derivatives (values and whether a custom_jvp rule is staged)."""
    x = jnp.array([[1., 2., -jnp.inf, 0.5], [3., -1., 0., 2.]])
    w = jnp.array([[True, True, False, True], [True, False, True, True]])
    v = jnp.array([[0.3, -1., 2., 0.1], [1., 2., 3., 4.]])
    return {
        "grad": lambda: jax.grad(lambda x: (jax.nn.softmax(x) * v).sum())(x),
        "grad_where": lambda: jax.grad(lambda x: (jax.nn.softmax(x, where=w) * v).sum())(x),
        "jvp_axis0": lambda: jax.jvp(lambda x: jax.nn.softmax(x, axis=0), (x,), (v,))[1],
        "jit_grad_where": lambda: jax.jit(jax.grad(
            lambda x: (jax.nn.softmax(x, where=w) * v).sum()))(x),
        "hessian": lambda: jax.hessian(lambda x: jax.nn.softmax(x)[1].sum())(x[1]),
        "custom_jvp_staged": lambda: "custom_jvp_call" in str(jax.make_jaxpr(
            lambda x: jax.nn.softmax(x))(x)),
    }

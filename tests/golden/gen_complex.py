"""Record JAX's derivatives of complex functions as golden data for tests/test_complex.py.

Run with a Python that has jax installed (never a corejax dependency):

    /work/jaxvenv/bin/python tests/golden/gen_complex.py

Writes tests/golden/complex.json: {"jax_version": ..., "cases": {name: result}}. Each case is a
function body in CASES, run with `jax`, `jnp`, `lax`, `np` bound to one framework and `z3`
(complex64[3]), `w3` (complex64[3]), `x3` (float32[3]) defined; test_complex.py runs the very
same bodies on corejax. A result is a list of leaves, each [dtype, shape, real parts, imaginary
parts], or {"error": exception type name}.
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "complex.json")

PRELUDE = """
z3 = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j], np.complex64)
w3 = np.array([0.5 - 1j, 2 + 0.5j, -1 - 1.5j], np.complex64)
x3 = np.array([0.3, -1.2, 2.0], np.float32)
"""

CASES = {
    # grad of real-valued functions of complex inputs: JAX's convention (the conjugate of
    # twice the Wirtinger derivative d/dz-bar)
    "grad_abs2": "return jax.grad(lambda z: jnp.abs(z) ** 2)(z3[0])",
    "grad_sum_abs_sin": "return jax.grad(lambda z: jnp.sum(jnp.abs(jnp.sin(z))))(z3)",
    "grad_real_sq": "return jax.grad(lambda z: jnp.sum(jnp.real(z * z)))(z3)",
    "grad_imag_exp": "return jax.grad(lambda z: jnp.sum(jnp.imag(jnp.exp(z))))(z3)",
    "grad_angle": "return jax.grad(lambda z: jnp.sum(jnp.angle(z)))(z3)",
    "grad_vdot": "return jax.grad(lambda z: jnp.real(jnp.vdot(z, w3 * z)))(z3)",
    "grad_norm": "return jax.grad(lambda z: jnp.linalg.norm(z))(z3)",
    "grad_var": "return jax.grad(lambda z: jnp.var(z))(z3)",
    "grad_two_args": "return jax.grad(lambda z, w: jnp.sum(jnp.abs(z * jnp.conj(w))), "
                     "argnums=(0, 1))(z3, w3)",
    "grad_real_input_complex_inside": "return jax.grad(lambda x: jnp.sum(jnp.abs("
                                      "jnp.exp(1j * x) + 0.5)))(x3)",
    "grad_fft_power": "return jax.grad(lambda z: jnp.sum(jnp.abs(jnp.fft.fft(z)) ** 2))(z3)",
    "grad_rfft": "return jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x))))(x3)",
    "grad_log_abs": "return jax.grad(lambda z: jnp.sum(jnp.log(jnp.abs(z))))(z3)",
    "jit_grad_abs_sin": "return jax.jit(jax.grad(lambda z: jnp.sum(jnp.abs(jnp.sin(z)))))(z3)",
    "vmap_grad_abs_sin": "return jax.vmap(jax.grad(lambda z: jnp.abs(jnp.sin(z))))(z3)",
    "grad_of_grad_abs2": "return jax.grad(lambda z: jnp.real(jax.grad(lambda u: jnp.abs(u) "
                         "** 2 * jnp.real(u))(z)))(z3[0])",
    # holomorphic derivatives
    "holo_grad_sq": "return jax.grad(lambda z: z * z, holomorphic=True)(z3[0])",
    "holo_grad_sin_exp": "return jax.grad(lambda z: jnp.sin(z) * jnp.exp(z), "
                         "holomorphic=True)(z3[1])",
    "holo_grad_pow": "return jax.grad(lambda z: z ** 3 / (1 + z), holomorphic=True)(z3[2])",
    "holo_jacfwd": "return jax.jacfwd(lambda z: jnp.tanh(z) * z[::-1], holomorphic=True)(z3)",
    "holo_jacrev": "return jax.jacrev(lambda z: jnp.log(z) + jnp.sqrt(z) * z[0], "
                   "holomorphic=True)(z3)",
    "holo_hessian": "return jax.hessian(lambda z: jnp.sum(z ** 3), holomorphic=True)(z3)",
    "holo_vmap_grad": "return jax.vmap(jax.grad(jnp.cosh, holomorphic=True))(z3)",
    "jvp_complex": "return jax.jvp(lambda z: jnp.sin(z) * jnp.conj(z), (z3,), (w3,))",
    "vjp_complex": "out, f = jax.vjp(lambda z: jnp.exp(z) * jnp.abs(z), z3)\n"
                   "    return out, f(w3)",
    "vjp_real_part": "out, f = jax.vjp(jnp.real, z3)\n    return f(x3)",
    "vjp_imag_part": "out, f = jax.vjp(jnp.imag, z3)\n    return f(x3)",
    "vjp_complex_of": "out, f = jax.vjp(lax.complex, x3, x3 * 2)\n    return f(w3)",
    "vjp_irfft": "out, f = jax.vjp(lambda z: jnp.fft.irfft(z, n=4), z3)\n"
                 "    return out, f(np.array([1.0, -2.0, 0.5, 3.0], np.float32))",
    "linear_transpose_conj": "return jax.linear_transpose(jnp.conj, z3)(w3)",
    # errors
    "err_complex_output": "return jax.grad(lambda z: z * z)(z3[0])",
    "err_holo_real_input": "return jax.grad(lambda z: z * z, holomorphic=True)(x3[0])",
    "err_holo_real_output": "return jax.grad(lambda z: jnp.abs(z), holomorphic=True)(z3[0])",
    "err_jacfwd_complex": "return jax.jacfwd(jnp.sin)(z3)",
    "err_jacrev_holo_real": "return jax.jacrev(jnp.sin, holomorphic=True)(x3)",
}


def describe(out, np):
    if isinstance(out, (tuple, list)):
        leaves = []
        for o in out:
            leaves += describe(o, np)
        return leaves
    a = np.asarray(out)
    return [[a.dtype.name, list(a.shape), np.real(a).astype(np.float64).ravel().tolist(),
             np.imag(a).astype(np.float64).ravel().tolist()]]


def run_case(body, names):
    src = "def _case():\n" + "".join("    " + line + "\n" for line in PRELUDE.strip().split(
        "\n")) + "    " + body + "\n"
    scope = dict(names)
    exec(src, scope)
    try:
        return describe(scope["_case"](), names["np"])
    except Exception as e:  # noqa: BLE001 (the exception type is the golden fact)
        return {"error": type(e).__name__}


def main():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    names = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
    results = {name: run_case(body, names) for name, body in CASES.items()}
    with open(OUT, "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": results}, fh, indent=0)
    print(f"{len(results)} cases -> {OUT}")


if __name__ == "__main__":
    main()

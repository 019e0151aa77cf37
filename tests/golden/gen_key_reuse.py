"""Golden outcomes of JAX 0.10.2's key-reuse checker (jax.debug_key_reuse) for
tests/test_key_reuse.py. Run with the reference JAX install:

    /work/jaxvenv/bin/python tests/golden/gen_key_reuse.py

Each program is source text run with the names `jax`, `jnp`, `lax`, `random` bound to JAX's
(or, in the test, corejax's) modules, with the checker on; it records whether the program
raised, the exception class and the first line of its message. Also records what the option
enable_custom_prng changes: the type of `random.PRNGKey`, `split` and `fold_in` results.
"""
import json
import os
import textwrap

PROGRAMS = {
    # eager
    "eager_normal_twice": "k = random.key(0); random.normal(k); random.normal(k)",
    "eager_randint_then_uniform": "k = random.key(0); random.randint(k, (), 0, 3); random.uniform(k)",
    "eager_permutation_twice": "k = random.key(0); random.permutation(k, 5); random.permutation(k, 5)",
    "eager_bits_twice": "k = random.key(0); random.bits(k); random.bits(k)",
    "eager_split_twice": "k = random.key(0); random.split(k); random.split(k)",
    "eager_split_then_normal": "k = random.key(0); random.split(k); random.normal(k)",
    "eager_normal_then_split": "k = random.key(0); random.normal(k); random.split(k, 3)",
    "eager_fold_in_twice": "k = random.key(0); random.fold_in(k, 1); random.fold_in(k, 2)",
    "eager_fold_in_then_normal": "k = random.key(0); random.fold_in(k, 1); random.normal(k)",
    "eager_normal_then_fold_in": "k = random.key(0); random.normal(k); random.fold_in(k, 1)",
    "eager_fold_in_result_twice":
        "k = random.fold_in(random.key(0), 1); random.normal(k); random.normal(k)",
    "eager_key_data_does_not_consume":
        "k = random.key(0); random.key_data(k); random.key_data(k); random.normal(k)",
    "eager_key_data_of_consumed": "k = random.key(0); random.normal(k); random.key_data(k)",
    "eager_clone_then_use": "k = random.key(0); random.normal(random.clone(k)); random.normal(k)",
    "eager_clone_of_consumed": "k = random.key(0); random.normal(k); random.normal(random.clone(k))",
    "eager_copy_is_fresh": "k = random.key(0); c = k.copy(); random.normal(k); random.normal(c)",
    "eager_wrap_key_data_twice": textwrap.dedent("""
        d = random.key_data(random.key(0))
        random.normal(random.wrap_key_data(d)); random.normal(random.wrap_key_data(d))"""),
    "eager_raw_key_untracked": "k = random.PRNGKey(0); random.normal(k); random.normal(k)",
    "eager_unpack_split": "k1, k2 = random.split(random.key(0)); random.normal(k1); random.normal(k2)",
    "eager_index_reuse": textwrap.dedent("""
        ks = random.split(random.key(0), 3)
        random.normal(ks[0]); random.normal(ks[1]); random.normal(ks[0])"""),
    "eager_index_twice_unused": "ks = random.split(random.key(0), 3); ks[0]; ks[0]",
    "eager_index_then_rest": "ks = random.split(random.key(0), 3); ks[0]; ks[1:]",
    "eager_index_then_overlap": "ks = random.split(random.key(0), 3); ks[0]; ks[:2]",
    "eager_split_shape_index":
        "k = random.key(0); random.split(k, (2, 3))[1, 2]; random.bits(random.fold_in(k, 3))",
    "eager_reshape_is_independent": textwrap.dedent("""
        ks = random.split(random.key(0), 4); r = ks.reshape(2, 2)
        random.normal(r[0, 0]); random.normal(ks[0])"""),
    "eager_reshape_carries_consumed": textwrap.dedent("""
        ks = random.split(random.key(0), 4); jax.vmap(random.normal)(ks)
        r = ks.reshape(2, 2); r[0, 0]"""),
    "eager_compare_does_not_consume": "k = random.key(0); k == k; random.normal(k)",
    "off_consumption_not_remembered": textwrap.dedent("""
        with reuse(False):
            k = random.key(0); random.normal(k)
        random.normal(k)"""),
    "off_reuse_allowed": textwrap.dedent("""
        k = random.key(0); random.normal(k)
        with reuse(False):
            random.normal(k)"""),
    # jit
    "jit_twice_inside": "jax.jit(lambda k: random.normal(k) + random.normal(k))(random.key(0))",
    "jit_call_twice_same_key":
        "f = jax.jit(lambda k: random.normal(k)); k = random.key(0); f(k); f(k)",
    "jit_consumes_argument_1":
        "f = jax.jit(lambda x, k: x + random.normal(k)); k = random.key(0); f(1.0, k); f(1.0, k)",
    "jit_identity_does_not_consume":
        "f = jax.jit(lambda k: k); k = random.key(0); f(k); f(k); random.normal(k)",
    "jit_identity_output_is_fresh":
        "k = random.key(0); k2 = jax.jit(lambda k: k)(k); random.normal(k); random.normal(k2)",
    "jit_identity_forwards_consumed":
        "k = random.key(0); random.normal(k); k2 = jax.jit(lambda k: k)(k); random.normal(k2)",
    "jit_key_data_of_consumed":
        "k = random.key(0); random.normal(k); jax.jit(random.key_data)(k)",
    "jit_split_then_use_argument": textwrap.dedent("""
        k = random.key(0); ks = jax.jit(lambda k: random.split(k))(k)
        random.normal(ks[0]); random.normal(ks[1]); random.normal(k)"""),
    "jit_split_unpack": textwrap.dedent("""
        @jax.jit
        def f(k):
            k1, k2 = random.split(k)
            return random.normal(k1) + random.normal(k2)
        f(random.key(0))"""),
    "jit_clone": "jax.jit(lambda k: random.normal(random.clone(k)) + random.normal(k))(random.key(0))",
    "jit_key_data_after_use": textwrap.dedent("""
        @jax.jit
        def f(k):
            random.normal(k)
            return random.key_data(k)
        f(random.key(0))"""),
    "jit_fold_in_twice": "jax.jit(lambda k: (random.fold_in(k, 1), random.fold_in(k, 2)))(random.key(0))",
    "make_jaxpr_twice": "jax.make_jaxpr(lambda k: random.normal(k) + random.normal(k))(random.key(0))",
    "make_jaxpr_once": "jax.make_jaxpr(lambda k: random.normal(k))(random.key(0))",
    "nested_jit_twice": textwrap.dedent("""
        g = jax.jit(lambda k: random.normal(k))
        jax.jit(lambda k: g(k) + g(k))(random.key(0))"""),
    "nested_jit_split": textwrap.dedent("""
        g = jax.jit(lambda k: random.normal(k))
        @jax.jit
        def f(k):
            a, b = random.split(k)
            return g(a) + g(b)
        f(random.key(0))"""),
    "nested_jit_then_use": textwrap.dedent("""
        g = jax.jit(lambda k: random.normal(k))
        jax.jit(lambda k: g(k) + random.uniform(k))(random.key(0))"""),
    # vmap, grad
    "vmap_once": "jax.vmap(random.normal)(random.split(random.key(0), 3))",
    "vmap_twice_inside":
        "jax.vmap(lambda k: random.normal(k) + random.normal(k))(random.split(random.key(0), 3))",
    "vmap_then_index":
        "ks = random.split(random.key(0), 3); jax.vmap(random.normal)(ks); random.normal(ks[0])",
    "vmap_consumed_argument": textwrap.dedent("""
        ks = random.split(random.key(0), 4)
        jax.vmap(random.normal)(ks); jax.vmap(random.normal)(ks)"""),
    "vmap_key_data_of_consumed": textwrap.dedent("""
        ks = random.split(random.key(0), 4)
        jax.vmap(random.normal)(ks); jax.vmap(random.key_data)(ks)"""),
    "vmap_jit_once": "jax.vmap(jax.jit(random.normal))(random.split(random.key(0), 3))",
    "grad_closure_then_use":
        "k = random.key(0); jax.grad(lambda x: x * random.normal(k))(1.0); random.normal(k)",
    "grad_twice_inside":
        "k = random.key(0); jax.grad(lambda x: x * random.normal(k) + x * random.normal(k))(1.0)",
    # control flow
    "cond_branches_each_once": textwrap.dedent("""
        f = jax.jit(lambda k, p: lax.cond(p, random.normal, random.uniform, k))
        f(random.key(0), True)"""),
    "switch_branches_each_once": textwrap.dedent("""
        lax.switch(1, [random.normal, random.uniform, lambda k: 0.0], random.key(0))"""),
    "cond_branch_twice": textwrap.dedent("""
        lax.cond(True, lambda k: random.normal(k) + random.uniform(k), random.uniform,
                 random.key(0))"""),
    "cond_then_use": textwrap.dedent("""
        k = random.key(0); lax.cond(True, random.normal, random.uniform, k); random.normal(k)"""),
    "cond_then_use_in_jit": textwrap.dedent("""
        f = jax.jit(lambda k, p: lax.cond(p, random.normal, random.uniform, k) + random.normal(k))
        f(random.key(0), True)"""),
    "scan_split_carry": textwrap.dedent("""
        def body(c, _):
            a, b = random.split(c)
            return a, random.normal(b)
        lax.scan(body, random.key(0), None, length=3)"""),
    "scan_keys_as_xs":
        "lax.scan(lambda c, k: (c, random.normal(k)), 0.0, random.split(random.key(0), 3))",
    "scan_body_twice": textwrap.dedent("""
        lax.scan(lambda c, k: (c, random.normal(k) + random.normal(k)), 0.0,
                 random.split(random.key(0), 3))"""),
    "scan_reuses_carry": textwrap.dedent("""
        lax.scan(lambda c, _: (c, random.normal(c)), random.key(0), None, length=3)"""),
    "fori_split_carry": textwrap.dedent("""
        def body(i, c):
            k, x = c
            k, s = random.split(k)
            return k, x + random.normal(s)
        lax.fori_loop(0, 3, body, (random.key(0), 0.0))"""),
    "while_reuses_carry": textwrap.dedent("""
        lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + random.normal(c[0])),
                       (random.key(0), 0.0))"""),
    # across control-flow boundaries: cond / switch, scan / fori_loop / map, while_loop
    "cond_one_branch":
        "k = random.key(0); lax.cond(True, random.normal, lambda k: 0.0, k); random.normal(k)",
    "cond_one_branch_false":
        "k = random.key(0); lax.cond(False, random.normal, lambda k: 0.0, k); random.normal(k)",
    "cond_neither":
        "k = random.key(0); lax.cond(True, lambda k: 1.0, lambda k: 0.0, k); random.normal(k)",
    "cond_fold_in":
        "k = random.key(0); lax.cond(True, lambda k: random.normal(random.fold_in(k,1)), lambda k: 0.0, k); random.normal(k)",
    "cond_returns_key_forward":
        "k = random.key(0); k2 = lax.cond(True, lambda k: k, lambda k: k, k); random.normal(k); random.normal(k2)",
    "cond_consumed_input":
        "k = random.key(0); random.normal(k); lax.cond(True, random.normal, lambda k: 0.0, k)",
    "cond_consumed_input_noop":
        "k = random.key(0); random.normal(k); lax.cond(True, lambda k: 1.0, lambda k: 0.0, k)",
    "cond_forward_vs_split":
        "k = random.key(0); k2 = lax.cond(True, lambda k: k, lambda k: random.split(k)[0], k); random.normal(k2); random.normal(k2)",
    "cond_closure":
        "k = random.key(0); lax.cond(True, lambda x: random.normal(k)+x, lambda x: x, 1.0); random.normal(k)",
    "cond_closure_both":
        "k = random.key(0); lax.cond(True, lambda x: random.normal(k)+x, lambda x: random.uniform(k)+x, 1.0)",
    "cond_closure_both_then":
        "k = random.key(0); lax.cond(True, lambda x: random.normal(k)+x, lambda x: random.uniform(k)+x, 1.0); random.normal(k)",
    "cond_closure_consumed_before":
        "k = random.key(0); random.normal(k); lax.cond(True, lambda x: random.normal(k)+x, lambda x: x, 1.0)",
    "switch_then_use":
        "k = random.key(0); lax.switch(2, [random.normal, random.uniform, lambda k: 0.0], k); random.normal(k)",
    "switch_consumed":
        "j = random.key(1); random.normal(j); lax.switch(1, [lambda b: random.normal(b), lambda b: 0.0], j)",
    "cond_inside_jit_twice":
        "jax.jit(lambda k: lax.cond(True, random.normal, random.uniform, k) + lax.cond(True, random.normal, random.uniform, k))(random.key(0))",
    "cond_jit_consumes_arg":
        "f = jax.jit(lambda k: lax.cond(True, random.normal, lambda k: 0.0, k)); k = random.key(0); f(k); f(k)",
    "cond_jit_consumed_in": textwrap.dedent("""
        @jax.jit
        def f(k):
            random.normal(k)
            return lax.cond(True, random.normal, lambda k: 0.0, k)
        f(random.key(0))"""),
    "cond_fwd_jit": textwrap.dedent("""
        @jax.jit
        def f(k):
            k2 = lax.cond(True, lambda k: k, lambda k: k, k)
            return random.normal(k2) + random.normal(k)
        f(random.key(0))"""),
    "cond_fwd_vs_split_jit2": textwrap.dedent("""
        @jax.jit
        def f(k):
            k2 = lax.cond(True, lambda k: k, lambda k: random.fold_in(k, 1), k)
            return random.normal(k2) + random.normal(k)
        f(random.key(0))"""),
    "cond_fwd_vs_fold_jit_k2twice": textwrap.dedent("""
        @jax.jit
        def f(k):
            k2 = lax.cond(True, lambda k: k, lambda k: random.fold_in(k, 1), k)
            return random.normal(k2) + random.normal(k2)
        f(random.key(0))"""),
    "cond_two_keys_index":
        "k = random.key(0); j = random.key(1); random.normal(j); lax.cond(True, lambda a, b: random.normal(b), lambda a, b: 0.0, k, j)",
    "cond_x_then_key":
        "j = random.key(1); random.normal(j); lax.cond(True, lambda a, b: random.normal(b), lambda a, b: 0.0, 1.0, j)",
    "scan_const_consumed":
        "k = random.key(0); lax.scan(lambda c, _: (c + random.normal(k), None), 0.0, None, length=3)",
    "scan_xs_then_use":
        "ks = random.split(random.key(0), 3); lax.scan(lambda c, k: (c + random.normal(k), None), 0.0, ks); random.normal(ks[0])",
    "scan_split_carry_then_use": textwrap.dedent("""
        def body(c, _):
            a, b = random.split(c)
            return a, random.normal(b)
        k = random.key(0); out, _ = lax.scan(body, k, None, length=3); random.normal(k)"""),
    "scan_carry_forward_unused":
        "k = random.key(0); out, _ = lax.scan(lambda c, _: (c, 0.0), k, None, length=3); random.normal(k); random.normal(out)",
    "scan_carry_swap": textwrap.dedent("""
        def body(c, _):
            a, b = c
            return (b, a), random.normal(random.fold_in(a, 1))
        lax.scan(body, (random.key(0), random.key(1)), None, length=3)"""),
    "scan_carry_fresh_from_xs":
        "lax.scan(lambda c, k: (k, random.normal(c)), random.key(0), random.split(random.key(1), 3))",
    "scan_consumed_input":
        "k = random.key(0); random.normal(k); lax.scan(lambda c, _: (random.split(c)[0], None), k, None, length=2)",
    "scan_consumed_input_fwd":
        "k = random.key(0); random.normal(k); lax.scan(lambda c, _: (c, None), k, None, length=2)",
    "scan_carry_fold":
        "lax.scan(lambda c, _: (random.fold_in(c, 1), random.normal(c)), random.key(0), None, length=2)",
    "scan_jit_consumed_arg": textwrap.dedent("""
        f = jax.jit(lambda k: lax.scan(lambda c, _: (random.split(c)[0], None), k, None, length=2)[0])
        k = random.key(0); f(k); f(k)"""),
    "fori_reuses_carry":
        "lax.fori_loop(0, 3, lambda i, c: (c[0], c[1] + random.normal(c[0])), (random.key(0), 0.0))",
    "fori_const_consumed":
        "k = random.key(0); lax.fori_loop(0, 3, lambda i, c: c + random.normal(k), 0.0)",
    "fori_closure_fold":
        "k = random.key(0); lax.fori_loop(0, 3, lambda i, c: c + random.normal(random.fold_in(k, i)), 0.0)",
    "while_const_consumed":
        "k = random.key(0); lax.while_loop(lambda c: c < 3, lambda c: c + random.normal(k), 0.0)",
    "while_cond_consumes":
        "k = random.key(0); lax.while_loop(lambda c: random.normal(k) < c, lambda c: c + 1, 0.0)",
    "while_split_carry":
        "lax.while_loop(lambda c: c[1] < 3, lambda c: (random.split(c[0])[0], c[1] + 1.0), (random.key(0), 0.0))",
    "while_split_carry_then_use":
        "k = random.key(0); lax.while_loop(lambda c: c[1] < 3, lambda c: (random.split(c[0])[0], c[1] + 1.0), (k, 0.0)); random.normal(k)",
    "while_forward_then_use":
        "k = random.key(0); lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1.0), (k, 0.0)); random.normal(k)",
    "while_mixed": textwrap.dedent("""
        k = random.key(0); j = random.key(1)
        lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + random.normal(j) , c[2]), (k, 0.0, random.key(2)))"""),
    "while_mixed2": textwrap.dedent("""
        k = random.key(0)
        lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + random.normal(c[2]) , c[2]), (k, 0.0, random.key(2)))"""),
    "while_mixed3": textwrap.dedent("""
        j = random.key(1)
        lax.while_loop(lambda c: c[1] < 3, lambda c: (random.fold_in(c[0], 1), c[1] + random.normal(c[0])+random.normal(j)), (random.key(0), 0.0))"""),
    "while_carry_consumed_not_sourced":
        "lax.while_loop(lambda c: c[1] < 3, lambda c: (c[2], c[1] + random.normal(c[0]), c[2]), (random.key(0), 0.0, random.key(2)))",
    "while_split_vec":
        "lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + random.normal(c[0][0])), (random.split(random.key(0), 2), 0.0))",
    "while_consumed_input":
        "k = random.key(0); random.normal(k); lax.while_loop(lambda c: c[1] < 3, lambda c: (random.split(c[0])[0], c[1] + 1.0), (k, 0.0))",
    "while_inv_float":
        "lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + random.normal(c[2]), c[2]), (1.0, 0.0, random.key(2)))",
    "while_inv_key_jit":
        "jax.jit(lambda a, k: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + random.normal(c[2]), c[2]), (a, 0.0, k)))(1.0, random.key(2))",
    "while_key_consumed_source_mismatch":
        "lax.while_loop(lambda c: c[1] < 3, lambda c: (random.fold_in(c[2], 1), c[1] + random.normal(c[0]), random.fold_in(c[2], 2)), (random.key(0), 0.0, random.key(2)))",
    "map_consumes":
        "ks = random.split(random.key(0), 3); lax.map(random.normal, ks); random.normal(ks[0])",
    "map_closure":
        "k = random.key(0); lax.map(lambda x: x + random.normal(k), jnp.arange(3.))",
    "map_twice":
        "ks = random.split(random.key(0), 3); lax.map(random.normal, ks); lax.map(random.normal, ks)",
    "checkpoint_then_use":
        "k = random.key(0); jax.checkpoint(random.normal)(k); random.normal(k)",
    "custom_jvp_then_use": textwrap.dedent("""
        @jax.custom_jvp
        def f(k, x): return x * random.normal(k)
        f.defjvp(lambda p, t: (f(*p), t[1]))
        k = random.key(0); f(k, 1.0); random.normal(k)"""),
    "custom_vjp_then_use": textwrap.dedent("""
        @jax.custom_vjp
        def f(k, x): return x * random.normal(k)
        f.defvjp(lambda k, x: (f(k, x), None), lambda r, g: (None, g))
        k = random.key(0); f(k, 1.0); random.normal(k)"""),
}


def run_program(src, jax, reuse):
    names = {"jax": jax, "jnp": jax.numpy, "lax": jax.lax, "random": jax.random,
             "reuse": reuse}
    try:
        with reuse(True):
            exec(src, names)
    except Exception as e:  # noqa: BLE001 (the outcome is what is recorded)
        return {"raises": type(e).__name__, "message": str(e).splitlines()[0]}
    return {"raises": None}


def custom_prng(jax, option):
    import numpy as np
    random = jax.random
    raw = jax.numpy.asarray(np.array([0, 0], np.uint32))
    out = {}
    for on in (False, True):
        with option(on):
            out[str(on)] = {
                "PRNGKey": str(random.PRNGKey(0).dtype),
                "key": str(random.key(0).dtype),
                "split_raw": str(random.split(raw).dtype),
                "fold_in_raw": str(random.fold_in(raw, 1).dtype),
                "clone_raw": str(random.clone(raw).dtype),
                "normal_raw": float(random.normal(raw)),
                "normal_PRNGKey": float(random.normal(random.PRNGKey(0))),
            }
    return out


def main():
    import jax
    out = {"jax_version": jax.__version__,
           "programs": {name: {"source": src, **run_program(src, jax, jax.debug_key_reuse)}
                        for name, src in PROGRAMS.items()},
           "enable_custom_prng": custom_prng(jax, jax.enable_custom_prng)}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "key_reuse.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

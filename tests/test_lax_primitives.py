"""lax's primitive objects under JAX's names (`lax.exp_p`), compared with the names JAX 0.10.2
exports (tests/golden/lax_primitives.json, from tests/golden/gen_lax_primitives.py), and used
the way JAX's "Writing custom Jaxpr interpreters" tutorial uses them."""
import json
import os

import numpy as np
import pytest

import corejax
import corejax.lax as lax
import corejax.numpy as jnp
from corejax.core import Literal

with open(os.path.join(os.path.dirname(__file__), "golden", "lax_primitives.json")) as fh:
    JAX_PRIMITIVES = json.load(fh)["primitives"]

# JAX primitives corejax does not stage: the operation is composed from other primitives (or,
# for tokens, sharding and send/recv, does not exist on one device), so binding the name to
# anything would make `eqn.primitive is lax.<name>` silently false.
NOT_EXPORTED = {
    "device_put_p", "copy_p", "sharding_constraint_p", "ragged_all_to_all_p", "approx_top_k_p",
    "reduce_p", "reduce_window_p", "select_and_gather_add_p", "select_and_scatter_add_p",
    "select_and_scatter_p",
}


@pytest.mark.parametrize("attribute", sorted(JAX_PRIMITIVES))
def test_primitive_has_jax_name(attribute):
    if attribute in NOT_EXPORTED:
        assert not hasattr(lax, attribute), f"{attribute} exists now: drop it from NOT_EXPORTED"
        return
    prim = getattr(lax, attribute)
    assert prim.name == JAX_PRIMITIVES[attribute]["name"]
    assert prim.multiple_results == JAX_PRIMITIVES[attribute]["multiple_results"]


def test_staged_equations_are_the_exported_primitives():
    jaxpr = corejax.make_jaxpr(
        lambda x, i: jnp.sum(jnp.sort(jnp.exp(x)).at[i].add(1.0) * 2))(jnp.ones(3), 1)
    prims = [eqn.primitive for eqn in jaxpr.jaxpr.eqns]
    for p in (lax.exp_p, lax.sort_p, lax.scatter_add_p, lax.mul_p, lax.reduce_sum_p):
        assert any(q is p for q in prims), (p, prims)


def _read(env, var):
    return var.val if isinstance(var, Literal) else env[var]


def _eval(jaxpr, consts, *args):
    """The tutorial's interpreter: walk the equations, bind each primitive."""
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        out = eqn.primitive.bind(*[_read(env, v) for v in eqn.invars], **eqn.params)
        env.update(zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]))
    return [_read(env, v) for v in jaxpr.outvars]


def _inverse(f):
    """The tutorial's inverse transformation, keyed by JAX's primitive names."""
    inverses = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh, lax.log_p: jnp.exp}

    def inverse(y):
        closed = corejax.make_jaxpr(f)(y)
        jaxpr = closed.jaxpr
        env = {jaxpr.outvars[0]: y}
        for eqn in reversed(jaxpr.eqns):
            env[eqn.invars[0]] = inverses[eqn.primitive](env[eqn.outvars[0]])
        return env[jaxpr.invars[0]]
    return inverse


def test_a_jaxpr_interpreter_keyed_by_primitives():
    f = lambda x: jnp.tanh(jnp.exp(x)) * 2.0 + jnp.sin(x)
    x = jnp.asarray([0.1, -0.4, 0.7], jnp.float32)
    closed = corejax.make_jaxpr(f)(x)
    (out,) = _eval(closed.jaxpr, closed.consts, x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(f(x)), rtol=1e-6)
    g = lambda x: jnp.tanh(jnp.exp(x))
    y = g(x)
    np.testing.assert_allclose(np.asarray(corejax.jit(_inverse(g))(y)), np.asarray(x),
                               rtol=1e-5)

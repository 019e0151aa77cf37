"""Tokens: values that carry no data and only order effects (XLA's tokens, lax.create_token
and lax.after_all). They print as `Tok` in jaxprs, pass through jit, and have no derivative
(their tangents are symbolic zeros)."""
from __future__ import annotations

from corejax.core import AbstractToken, Primitive, Token, Tracer, abstract_token
from corejax.transforms import ad, batching

__all__ = ["create_token", "after_all", "create_token_p", "after_all_p"]

create_token_p = Primitive("create_token")
create_token_p.def_impl(lambda: Token())
create_token_p.def_abstract_eval(lambda: abstract_token)
create_token_p.weak_type_rule = lambda *args, **params: False
ad.defjvp_zero(create_token_p)


def _after_all_abstract(*operands):
    if any(type(a) is not AbstractToken for a in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return abstract_token


after_all_p = Primitive("after_all")
after_all_p.def_impl(lambda *tokens: Token())
after_all_p.def_abstract_eval(_after_all_abstract)
after_all_p.weak_type_rule = lambda *args, **params: False
ad.defjvp_zero(after_all_p)
# A token holds no data, so it is the same for every member of a batch.
batching.primitive_batchers[after_all_p] = lambda vals, dims: (after_all_p.bind(*vals), None)


def create_token(_=None):
    """A token with no preconditions (the argument is ignored, as in JAX)."""
    return create_token_p.bind()


def after_all(*operands):
    """A token that comes after all the given tokens."""
    for x in operands:
        if not (type(x) is Token or (isinstance(x, Tracer) and type(x.aval) is AbstractToken)):
            raise TypeError("Arguments to after_all must be tokens")
    return after_all_p.bind(*operands)

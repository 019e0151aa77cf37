"""Inputs of flax.linen.dtypes' golden cases, built alike by Flax (gen_flax_dtypes.py) and nn
(tests/test_nn_dtypes.py): ("array", dtype name) is jnp.ones(2, dtype), ("py", value) a Python
scalar, None stays None; a "dtype" keyword is a dtype name."""

CASES = [
    ([("array", "int32"), ("py", 1.0)], {}),
    ([("array", "int32")], {"inexact": False}),
    ([("array", "int32")], {}),
    ([("array", "float16"), ("py", 1.0)], {}),
    ([("array", "int32"), ("array", "float16")], {}),
    ([("array", "bool"), ("array", "uint8")], {}),
    ([("py", 1), ("py", 2.0)], {"dtype": "float16"}),
    ([None, ("array", "float32")], {}),
    ([("array", "float32")], {"dtype": "int32"}),
    ([("array", "float32")], {"dtype": "int32", "inexact": False}),
    ([("array", "float16"), ("array", "float32")], {"dtype": "float16"}),
    ([("py", 3)], {}),
    ([("array", "uint8"), ("array", "int8")], {"inexact": False}),
]


def build(args, kwargs, jnp):
    built = []
    for a in args:
        if a is None:
            built.append(None)
        elif a[0] == "array":
            built.append(jnp.ones(2, getattr(jnp, a[1])))
        else:
            built.append(a[1])
    kw = dict(kwargs)
    if "dtype" in kw:
        kw["dtype"] = getattr(jnp, kw["dtype"])
    return built, kw

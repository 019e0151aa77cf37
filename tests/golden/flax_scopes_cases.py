"""The cases of tests/golden/gen_flax_scopes.py (run with Flax) and tests/test_nn_scopes.py (run
with `nn`), defined once: `cases(nn, jax, jnp)` builds them from whichever library it is given
(flax.linen / jax / jax.numpy, or nn / corejax / corejax.numpy; their APIs match). Each case is
a function of no arguments whose result `plain()` turns into JSON data: what share_scope,
compact_name_scope, fold_rngs, add_metadata_axis, the named_call switches, nn.vmap's keyword
arguments and metadata, kw_only_dataclasses, batch_apply, spmd and the normalization layers'
axis_name do. No jax / flax import here."""
import dataclasses
import inspect
import warnings

import numpy as np


def plain(x):
    """JSON data for a result: arrays as {"dtype", "shape", "values"} (keys as their data)."""
    if isinstance(x, dict) or hasattr(x, "items"):
        return {str(k): plain(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    a = np.asarray(x)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "values": a.ravel().tolist()}


def outcome(fn):
    """plain(fn()), or {"error": exception type name}."""
    try:
        return plain(fn())
    except Exception as e:  # noqa: BLE001 (the exception type is the golden fact)
        return {"error": type(e).__name__}


def _inputs(jnp):
    x = jnp.asarray(np.cos(np.arange(2 * 5) * 0.7).reshape(2, 5), jnp.float32)
    batch = jnp.asarray(np.sin(np.arange(4 * 3 * 6) * 0.37).reshape(4, 3, 6) * 2 + 0.5,
                        jnp.float32)
    return x, batch


def cases(nn, jax, jnp):  # noqa: C901 (one namespace of small models)
    random = jax.random
    x, batch = _inputs(jnp)
    key = random.PRNGKey(0)
    shapes = lambda tree: jax.tree_util.tree_map(lambda a: list(a.shape), tree)
    out = {}

    # --- share_scope ---------------------------------------------------------------------
    class DenseLoRA(nn.Module):
        base: nn.Module
        rank: int

        def setup(self):
            nn.share_scope(self, self.base)

        @nn.compact
        def __call__(self, x):
            a = self.param("A", nn.initializers.normal(1.0), (x.shape[-1], self.rank))
            b = self.param("B", nn.initializers.normal(1.0), (self.rank, self.base.features))
            extra = nn.Dense(2, name="extra")(x).sum()
            return self.base(x) + x @ a @ b + extra

    class LoRAModel(nn.Module):
        @nn.compact
        def __call__(self, x):
            return DenseLoRA(nn.Dense(3), rank=2)(x)

    class LoRAChild(nn.Module):
        features: int
        rank: int

        def setup(self):
            self.child = nn.Dense(self.features)
            nn.share_scope(self, self.child)

        @nn.compact
        def __call__(self, x):
            a = self.param("A", nn.initializers.normal(1.0), (x.shape[-1], self.rank))
            return self.child(x) + (x @ a).sum()

    class LoRAChildModel(nn.Module):
        @nn.compact
        def __call__(self, x):
            return LoRAChild(3, 2)(x)

    class ShareInCompact(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.Dense(3)
            nn.share_scope(self, dense)
            return dense(x)

    def init_apply(model, init_rngs, *args, **apply_kwargs):
        def run():
            variables = model.init(init_rngs, *args)
            return {"variables": variables, "out": model.apply(variables, *args,
                                                               **apply_kwargs)}
        return run

    out["share_scope_lora"] = init_apply(LoRAModel(), key, x)
    out["share_scope_child"] = init_apply(LoRAChildModel(), key, x)
    out["share_scope_compact"] = init_apply(ShareInCompact(), key, x)
    out["share_scope_unbound"] = lambda: nn.share_scope(nn.Dense(3), nn.Dense(3))

    # --- compact_name_scope ----------------------------------------------------------------
    class UpDown(nn.Module):
        @nn.compact_name_scope
        def up(self, x):
            return nn.Dense(3)(x) + nn.Dense(3)(x)

        @nn.compact_name_scope
        def down(self, x):
            return self.inner(nn.Dense(3)(x))

        @nn.compact_name_scope
        def inner(self, x):
            return nn.Dense(3)(x)

        def __call__(self, x):
            return self.up(x) + self.down(x) + self.up(x)

    def updown():
        model = UpDown()
        variables = model.init(key, x)
        return {"variables": variables, "out": model.apply(variables, x),
                "down": model.apply(variables, x, method="down"),
                "up": model.apply(variables, x, method=UpDown.up)}

    class InCompact(nn.Module):
        @nn.compact
        def __call__(self, x):
            return self.sub(nn.Dense(3)(x)) + nn.Dense(3)(x) + self.scaled(x).sum()

        @nn.compact_name_scope
        def sub(self, x):
            return nn.Dense(3)(x)

        @nn.compact_name_scope
        def scaled(self, x):
            w = self.param("w", nn.initializers.normal(1.0), (x.shape[-1],))
            return x * w

    class WithSetup(nn.Module):
        def setup(self):
            self.d = nn.Dense(3)

        @nn.compact_name_scope
        def f(self, x):
            return self.d(x) + nn.Dense(3)(x)

        def __call__(self, x):
            return self.f(x)

    class NameScopeDropout(nn.Module):
        @nn.compact_name_scope
        def sub(self, x):
            return nn.Dropout(0.5, deterministic=False)(x) + nn.Dense(5)(x)

        def __call__(self, x):
            return self.sub(x) + self.sub(x)

    out["compact_name_scope_updown"] = updown
    out["compact_name_scope_in_compact"] = init_apply(InCompact(), key, x)
    out["compact_name_scope_setup"] = init_apply(WithSetup(), key, x)
    out["compact_name_scope_dropout"] = init_apply(
        NameScopeDropout(), {"params": key, "dropout": random.PRNGKey(1)}, x,
        rngs={"dropout": random.PRNGKey(2)})
    out["compact_name_scope_unbound"] = lambda: UpDown().up(x)

    # --- fold_rngs and nn.jit's PRNG counters ------------------------------------------------
    class Leaf(nn.Module):
        def __call__(self):
            return self.make_rng("noise")

    class Draws(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.Dense(3)(x)
            a, b = self.make_rng("noise"), self.make_rng("noise")
            return h, a, b, Leaf()()

    def twice(transform, **kw):
        class Outer(nn.Module):
            @nn.compact
            def __call__(self, x):
                layer = transform(Draws, **kw)()
                return layer(x), layer(x), self.make_rng("noise")

        model = Outer()
        rngs = {"params": key, "noise": random.PRNGKey(1)}
        return lambda: {"init": model.init_with_output(rngs, x),
                        "apply": model.apply(model.init(rngs, x), x,
                                             rngs={"noise": random.PRNGKey(3)})}

    def fold_function_form():
        class Outer(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.fold_rngs(lambda mdl, v: mdl(v))(Draws(), x)
        return Outer().init_with_output({"params": key, "noise": random.PRNGKey(1)}, x)

    def fold_params_only():
        class Outer(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.fold_rngs(Draws, rngs="params")()(x)
        return Outer().init_with_output({"params": key, "noise": random.PRNGKey(1)}, x)

    out["fold_rngs_twice"] = twice(nn.fold_rngs)
    out["jit_twice"] = twice(nn.jit)
    out["fold_rngs_function"] = fold_function_form
    out["fold_rngs_params_only"] = fold_params_only

    # --- add_metadata_axis and vmap/scan metadata ------------------------------------------
    class Boxed(nn.Module):
        report: bool = True  # also return the names the module sees (not under vmap)

        @nn.compact
        def __call__(self, x):
            k = self.param("k", nn.with_partitioning(nn.initializers.ones, ("a", "b")),
                           (x.shape[-1], 2))
            s = self.variable("stats", "s", lambda: nn.Partitioned(jnp.zeros(3), ("c",)))
            s.value = s.value + 1.0
            if not self.report:
                return x @ k
            return x @ k, list(self.variables["params"]["k"].names)

    def metadata(variable_axes, metadata_params):
        def run():
            model = nn.add_metadata_axis(Boxed, variable_axes=variable_axes,
                                         metadata_params=metadata_params)()
            v = model.init(key, x)
            y, upd = model.apply(v, x, mutable=["stats"])
            return {"names": {c: {n: list(b.names) for n, b in t.items()}
                              for c, t in v.items()},
                    "inside": y[1], "out": y[0],
                    "updated": list(upd["stats"]["s"].names)}
        return run

    out["add_metadata_axis_0"] = metadata({"params": 0}, {nn.PARTITION_NAME: "layers"})
    out["add_metadata_axis_two"] = metadata({"params": 1, "stats": 0},
                                            {nn.PARTITION_NAME: "L"})
    out["add_metadata_axis_negative"] = metadata({"params": -1}, {nn.PARTITION_NAME: "L"})
    out["add_metadata_axis_unnamed"] = metadata({"params": 0}, {})

    class BoxedCell(nn.Module):
        @nn.compact
        def __call__(self, c, x):
            k = self.param("k", nn.with_partitioning(nn.initializers.ones, ("a", "b")),
                           (x.shape[-1], 2))
            return c, x @ k

    def vmap_metadata(metadata_params):
        def run():
            model = nn.vmap(Boxed, variable_axes={"params": 1, "stats": 0},
                            split_rngs={"params": True}, metadata_params=metadata_params)(False)
            v = model.init(key, batch[:, 0])
            y, upd = model.apply(v, batch[:, 0], mutable=["stats"])
            return {"names": list(v["params"]["k"].names), "shape": list(v["params"]["k"]
                                                                        .value.shape),
                    "stats": list(upd["stats"]["s"].names), "out": y}
        return run

    def scan_metadata(metadata_params):
        def run():
            model = nn.scan(BoxedCell, variable_axes={"params": 0}, split_rngs={"params": True},
                            metadata_params=metadata_params)()
            v = model.init(key, 0.0, batch[:, 0])
            return {"names": list(v["params"]["k"].names),
                    "shape": list(v["params"]["k"].value.shape),
                    "out": model.apply(v, 0.0, batch[:, 0])[1]}
        return run

    out["vmap_metadata"] = vmap_metadata({nn.PARTITION_NAME: "L"})
    out["vmap_metadata_unnamed"] = vmap_metadata({})
    out["scan_metadata"] = scan_metadata({nn.PARTITION_NAME: "L"})
    out["scan_metadata_unnamed"] = scan_metadata({})

    # --- nn.vmap's keyword arguments --------------------------------------------------------
    class Scaled(nn.Module):
        @nn.compact
        def __call__(self, x, scale=1.0, shift=None):
            y = nn.Dense(2)(x) * scale
            return y if shift is None else y + shift

    def vmap_kwargs():
        model = nn.vmap(Scaled, variable_axes={"params": 0}, split_rngs={"params": True})()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            y, v = model.init_with_output(key, batch[:, 0], shift=jnp.ones(2), scale=3.0)
            y2 = model.apply(v, batch[:, 0], scale=jnp.arange(4.0))
        return {"out": y, "out2": y2,
                "warnings": [[w.category.__name__, str(w.message)] for w in seen]}

    out["vmap_kwargs"] = vmap_kwargs

    # --- named_call --------------------------------------------------------------------------
    def named_call_switches():
        from importlib import import_module
        module = import_module(nn.Module.__module__)  # flax.linen.module / nn.module
        seen = [module._use_named_call]
        nn.disable_named_call()
        seen.append(module._use_named_call)
        with nn.override_named_call(True) as r:
            seen += [module._use_named_call, r]
        seen.append(module._use_named_call)
        nn.enable_named_call()
        seen.append(module._use_named_call)
        with nn.override_named_call(False):
            seen.append(module._use_named_call)
        seen.append(module._use_named_call)

        def double(self, v):
            return v * 2

        class Named(nn.Module):
            @nn.compact
            @nn.named_call
            def __call__(self, v):
                return nn.Dense(2)(v) + nn.named_call(double, force=False)(self, v).sum()

        named = nn.named_call(double)
        unbound = named(Named(), 3.0)
        with nn.override_named_call(False):
            y, v = Named().init_with_output(key, x)
        return {"switches": seen, "unbound": unbound, "name": named.__name__, "out": y,
                "variables": shapes(v)}

    out["named_call"] = named_call_switches

    # --- kw_only_dataclasses -------------------------------------------------------------------
    kwd = nn.kw_only_dataclasses

    def describe(cls):
        return {"signature": str(inspect.signature(cls)),
                "fields": [[f.name, sorted(repr(k) for k in f.metadata)]
                           for f in dataclasses.fields(cls)]}

    def kw_only():
        @kwd.dataclass
        class A:
            x: int
            y: int = kwd.field(default=2, kw_only=True)
            z: int = 3

        @kwd.dataclass
        class B(A):
            w: int = 5
            _: kwd.KW_ONLY
            v: int = 6

        @kwd.dataclass
        class C(B):
            y: int = 7
            q: int = 8

        @kwd.dataclass(frozen=True)
        class D:
            a: int
            b: int = kwd.field(default_factory=list, kw_only=True)

        class Plain:
            pass
        E = kwd.dataclass(Plain, extra_fields=[
            ("parent", object, kwd.field(default=None, kw_only=True)),
            ("name", str, dataclasses.field(default=None))])

        @kwd.dataclass
        class F:
            a: int = dataclasses.field(default=1, kw_only=True)
            b: int = 0

        @kwd.dataclass
        class G(A):
            t: int = 4
            u: int = kwd.field(default=9, kw_only=True)

        def no_default_after_default():
            @kwd.dataclass
            class H(A):
                t: int
            return describe(H)

        result = {n: describe(c) for n, c in zip("ABCDEFG", (A, B, C, D, E, F, G))}
        result["A(1)"] = repr(A(1)).split(".")[-1]
        result["G(1, 2, 3, u=4)"] = repr(G(1, 2, 3, u=4)).split(".")[-1]
        result["H"] = outcome(no_default_after_default)
        result["B(1, 2, 3, v=4, y=5)"] = repr(B(1, 2, 3, v=4, y=5)).split(".")[-1]
        result["B(1, 2, 3, 4)"] = outcome(lambda: B(1, 2, 3, 4))
        try:
            A(1, 2, 3)
        except TypeError as e:
            result["A(1, 2, 3)"] = str(e)
        result["KW_ONLY"] = repr(kwd.KW_ONLY)
        result["field_metadata"] = sorted(repr(k) for k in kwd.field(default=0, kw_only=True)
                                          .metadata)
        result["field_false"] = sorted(repr(k) for k in kwd.field(kw_only=False).metadata)
        result["A is decorated"] = kwd.dataclass(Plain) is Plain
        result["no default"] = outcome(lambda: kwd.field(kw_only=True))

        def marker_without_default():
            @kwd.dataclass
            class H:
                _: kwd.KW_ONLY
                a: int
            return describe(H)
        result["marker without default"] = outcome(marker_without_default)
        try:
            D(1).a = 2
            result["frozen"] = "assigned"
        except dataclasses.FrozenInstanceError:
            result["frozen"] = "FrozenInstanceError"
        return result

    out["kw_only_dataclasses"] = kw_only

    # --- batch_apply -----------------------------------------------------------------------------
    def batch_apply():
        ba = nn.batch_apply
        a = batch
        return {
            "merge": [list(ba.merge_leading_dims(a, n).shape) for n in (1, 2, 3)],
            "merge_small": list(ba.merge_leading_dims(jnp.ones(2), 2).shape),
            "merge_scalar": ba.merge_leading_dims(3.0, 2),
            "ndim": [ba.ndim_at_least(a, 3), ba.ndim_at_least(a, 4), ba.ndim_at_least(3.0, 0),
                     ba.ndim_at_least([1, 2], 1)],
            "split": [list(ba.split_leading_dim(jnp.ones((6, 5)), (2, 3)).shape),
                      list(ba.split_leading_dim(jnp.ones((6, 5)), (2, -1)).shape)],
            "leaf": [list(ba.arbitrary_mergeable_leaf(2, (jnp.ones(3), jnp.ones((4, 5))), {})
                          .shape),
                     list(ba.arbitrary_mergeable_leaf(2, (jnp.ones(3),),
                                                      {"k": jnp.ones((4, 5, 6))}).shape),
                     ba.arbitrary_mergeable_leaf(2, (jnp.ones(3),), {})],
            "apply": ba.BatchApply(lambda v, s, k=None: (v * s + k, v.sum(-1)))(
                a, 2.0, k=jnp.ones((4, 3, 6))),
            "apply_1": ba.BatchApply(lambda v: v[:, :2], num_dims=1)(a),
            "apply_dict": ba.BatchApply(lambda v: {"y": v[:, :1]}, num_dims=3)(
                jnp.ones((2, 3, 4, 5))),
            "same_class": ba.BatchApply is nn.BatchApply,
            "too_small": outcome(lambda: ba.BatchApply(lambda v: v)(jnp.ones(3))),
        }

    out["batch_apply"] = batch_apply

    # --- spmd ------------------------------------------------------------------------------------
    def spmd():
        sp = nn.spmd
        P = jax.sharding.PartitionSpec
        rules = [("batch", "data"), ("unsharded", None)]
        result = {"fallbacks": [[f.name, f.value] for f in sp.RulesFallback],
                  "same": [sp.with_logical_constraint is nn.with_logical_constraint,
                           sp.logical_to_mesh_axes is nn.logical_to_mesh_axes,
                           sp.LogicallyPartitioned is nn.LogicallyPartitioned,
                           sp.get_logical_axis_rules is nn.get_logical_axis_rules]}
        for spec in [("batch", None), ("batch", "unknown"), ("batch", "unsharded"),
                     (None, None), P("batch", "unknown")]:
            for fb in sp.RulesFallback:
                result[f"{spec}/{fb.name}"] = outcome(lambda: sp.with_logical_constraint(
                    x, spec, rules=rules, fallback=fb))
        result["tree"] = outcome(lambda: sp.with_logical_constraint(
            {"a": x, "b": x}, {"a": P("batch", None), "b": P(None, "unknown")}, rules=rules,
            fallback=sp.RulesFallback.RAISE_ERROR))
        result["tree_one_spec"] = outcome(lambda: sp.with_logical_constraint(
            {"a": x, "b": x}, ("batch", None), rules=rules))
        result["none"] = outcome(lambda: sp.with_logical_constraint(x, None, rules=rules))
        with nn.logical_axis_rules(rules):
            result["context_raise"] = outcome(lambda: sp.with_logical_constraint(
                x, ("batch", "zz"), fallback=sp.RulesFallback.RAISE_ERROR))
        box = nn.LogicallyPartitioned(jnp.ones((2, 3)), ("batch", "embed"),
                                      rules=(("batch", "X"),))
        result["logical_spec"] = [str(box.get_partition_spec()),
                                  str(nn.get_partition_spec({"p": box})["p"])]
        result["add_axis"] = list(box.add_axis(0, {nn.PARTITION_NAME: "L"}).names)
        result["remove_axis_unnamed"] = outcome(lambda: box.remove_axis(0, {}))
        return result

    out["spmd"] = spmd

    # --- normalization across a named axis ---------------------------------------------------
    def cross_replica(layer, data=batch, **call):
        """The layer on each replica's slice of `data` (vmap with axis_name="batch"), and on
        the first slice alone (no axis name) for contrast."""
        def run():
            local = layer.clone(axis_name=None)
            v = local.init(key, data[0], **call)

            def step(xb):
                return layer.apply(v, xb, mutable=["batch_stats"], **call)
            y, upd = jax.vmap(step, axis_name="batch")(data)
            return {"out": y, "updated": upd,
                    "local": local.apply(v, data[0], mutable=["batch_stats"], **call)}
        return run

    out["batchnorm_axis_name"] = cross_replica(
        nn.BatchNorm(use_running_average=False, axis_name="batch", momentum=0.8))
    out["batchnorm_axis_name_slow_var"] = cross_replica(
        nn.BatchNorm(axis_name="batch", use_fast_variance=False, axis=0), use_running_average=False)
    out["layernorm_axis_name"] = cross_replica(nn.LayerNorm(axis_name="batch"))
    out["rmsnorm_axis_name"] = cross_replica(nn.RMSNorm(axis_name="batch"))
    out["instancenorm_axis_name"] = cross_replica(nn.InstanceNorm(axis_name="batch"),
                                                  data=jnp.reshape(batch, (2, 2, 3, 6)))

    class VmappedBN(nn.Module):
        @nn.compact
        def __call__(self, xs, train=True):
            bn = nn.vmap(nn.BatchNorm, variable_axes={"params": None, "batch_stats": None},
                         split_rngs={"params": False}, axis_name="lanes")
            return bn(use_running_average=not train, axis_name="lanes")(xs)

    def vmapped_bn():
        model = VmappedBN()
        v = model.init(key, batch)
        y, upd = model.apply(v, batch, mutable=["batch_stats"])
        return {"variables": v, "out": y, "updated": upd,
                "eval": model.apply({**v, **upd}, batch, False)}

    out["batchnorm_nn_vmap_axis_name"] = vmapped_bn
    return out

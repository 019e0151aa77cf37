"""The models of tests/golden/gen_flax_params.py (run with Flax) and tests/test_nn_flax_params.py
(run with `nn`), defined once: `runs(nn, random, jnp)` builds them from whichever library's
`nn` (flax.linen or nn), `random` (jax.random or corejax.random) and `jnp` it is given (their
APIs match). No jax / flax import here."""
import numpy as np


def _inputs(jnp):
    x = jnp.asarray(np.cos(np.arange(2 * 5) * 0.7).reshape(2, 5), jnp.float32)
    img = jnp.asarray(np.sin(np.arange(2 * 4 * 4 * 2) * 0.3).reshape(2, 4, 4, 2), jnp.float32)
    tokens = jnp.asarray([[1, 6, 0], [3, 3, 2]], jnp.int32)
    seq = jnp.asarray(np.cos(np.arange(2 * 3 * 4) * 0.45).reshape(2, 3, 4), jnp.float32)
    return x, img, tokens, seq


def runs(nn, random, jnp):
    """[(name, module, init rngs, init args, apply kwargs incl. rngs)]."""
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(6)(x))
            x = nn.Dense(5, use_bias=False)(x)
            return nn.Dense(3, name="head")(x)

    class Block(nn.Module):
        features: int

        @nn.compact
        def __call__(self, x):
            return nn.LayerNorm()(nn.Dense(self.features)(x))

    class SetupNet(nn.Module):
        def setup(self):
            self.encoder = Block(4)
            self.layers = [nn.Dense(3), nn.Dense(2)]
            self.scale = self.param("scale", nn.initializers.normal(1.0), (2,))

        def __call__(self, x):
            x = self.encoder(x)
            for layer in self.layers:
                x = layer(x)
            return x * self.scale

    class Shared(nn.Module):
        """One Dense called twice, a Dropout called twice, and several params in one module."""

        @nn.compact
        def __call__(self, x, train=True):
            dense = nn.Dense(4)
            drop = nn.Dropout(0.5)
            w = self.param("w", nn.initializers.normal(1.0), (4,))
            u = self.param("u", nn.initializers.uniform(1.0), (4,))
            y = drop(dense(x), deterministic=not train)
            y = drop(dense(x) + y, deterministic=not train)
            noise = random.normal(self.make_rng("noise"), (4,))
            noise2 = random.normal(self.make_rng("noise"), (4,))
            return y * w + u + noise + noise2

    class Streams(nn.Module):
        """make_rng on several streams, one that falls back to 'params'."""

        @nn.compact
        def __call__(self, x):
            a = random.uniform(self.make_rng("dropout"), (3,))
            b = random.uniform(self.make_rng("other"), (3,))
            c = random.uniform(self.make_rng("params"), (3,))
            return nn.Dense(3)(x) + a + b + c

    class Layers(nn.Module):
        @nn.compact
        def __call__(self, img, tokens, seq):
            y = nn.Conv(4, (3, 3))(img)
            y = nn.BatchNorm(use_running_average=False)(y)
            y = nn.ConvTranspose(3, (2, 2), strides=(2, 2))(y)
            y = nn.GroupNorm(num_groups=3)(y)
            e = nn.Embed(7, 5)(tokens)
            e = nn.DenseGeneral((2, 3), axis=-1)(e)
            e = nn.RMSNorm()(e.reshape(e.shape[:-2] + (6,)))
            a = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4)(seq)
            a = nn.Dropout(0.3, deterministic=False)(a)
            return y.sum() + e.sum() + a.sum()

    class Masks(nn.Module):
        """Dropout masks alone: two calls of one Dropout and one with broadcast_dims."""

        @nn.compact
        def __call__(self, x):
            drop = nn.Dropout(0.4, deterministic=False)
            wide = nn.Dropout(0.25, broadcast_dims=(0,), deterministic=False, name="wide")
            return drop(x) + 10 * drop(x) + 100 * wide(x)

    class Stack(nn.Module):
        """Sequential, a setup submodule called twice, and attention with dropout."""

        def setup(self):
            self.seq = nn.Sequential([nn.Dense(4), nn.relu, nn.Dense(4)])
            self.attn = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4,
                                                        dropout_rate=0.5, deterministic=False)

        def __call__(self, seq):
            h = self.seq(self.seq(seq))
            return self.attn(h) + self.attn(h)

    class SeqCompact(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Sequential([nn.Dense(3), nn.relu, nn.Dense(2)])(x)

    class Inner(nn.Module):
        layer: nn.Module

        @nn.compact
        def __call__(self, x):
            return self.layer(x) + nn.Dense(3)(x)

    class Passed(nn.Module):
        """A submodule passed as an attribute to another and also called by its creator."""

        @nn.compact
        def __call__(self, x):
            d = nn.Dense(3)
            return Inner(d)(x) + d(x)

    x, img, tokens, seq = _inputs(jnp)
    k = random.PRNGKey
    return [
        ("dense", nn.Dense(3), k(0), (x,), {}),
        ("mlp", MLP(), k(1), (x,), {}),
        ("setup", SetupNet(), k(2), (x,), {}),
        ("shared", Shared(), {"params": k(3), "dropout": k(4), "noise": k(5)}, (x,),
         {"rngs": {"dropout": k(6), "noise": k(7)}}),
        ("streams", Streams(), {"params": k(8), "dropout": k(9)}, (x,),
         {"rngs": {"params": k(10), "dropout": k(11)}}),
        ("layers", Layers(), {"params": k(12), "dropout": k(13)}, (img, tokens, seq),
         {"rngs": {"dropout": k(14)}, "mutable": ["batch_stats"]}),
        ("masks", Masks(), {"dropout": k(15)}, (jnp.ones((3, 8), jnp.float32),),
         {"rngs": {"dropout": k(16)}}),
        ("stack", Stack(), {"params": k(17), "dropout": k(18)}, (seq,),
         {"rngs": {"dropout": k(19)}}),
        ("seq_compact", SeqCompact(), k(20), (x,), {}),
        ("passed", Passed(), k(21), (x,), {}),
    ]


def flatten(prefix, tree, out):
    if isinstance(tree, dict):
        for name, sub in tree.items():
            flatten(f"{prefix}/{name}", sub, out)
    else:
        out[prefix] = np.asarray(tree)

"""Model cases shared by tests/golden/gen_flax_layers.py (run with Flax) and the corejax tests
(run with `nn`): each case is a function of the `nn` and `jnp` modules (the APIs match), so
the same definition builds the Flax model and ours. No jax / flax import here.

A case returns a dict: model, args (NumPy inputs), kwargs (apply keyword arguments),
init_kwargs (defaults to kwargs), rngs (extra streams for apply, by name -> seed), mutable
(apply's mutable), grad (whether the gradient of sum(out**2) in params and args is recorded).
"""
import numpy as np


def _x(seed, *shape):
    return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


def lstm_cell(nn, jnp):
    return dict(model=nn.LSTMCell(5), args=((_x(1, 2, 5), _x(2, 2, 5)), _x(3, 2, 3)), grad=True)


def optimized_lstm_cell(nn, jnp):
    return dict(model=nn.OptimizedLSTMCell(5), args=((_x(1, 2, 5), _x(2, 2, 5)), _x(3, 2, 3)))


def gru_cell(nn, jnp):
    return dict(model=nn.GRUCell(4), args=(_x(1, 2, 4), _x(3, 2, 3)), grad=True)


def simple_cell(nn, jnp):
    return dict(model=nn.SimpleCell(4, residual=True), args=(_x(1, 2, 4), _x(3, 2, 3)))


def mgu_cell(nn, jnp):
    return dict(model=nn.MGUCell(4), args=(_x(1, 2, 4), _x(3, 2, 3)))


def mgu_cell_no_reset(nn, jnp):
    return dict(model=nn.MGUCell(4, reset_gate=False), args=(_x(1, 2, 4), _x(3, 2, 3)))


def conv_lstm_cell(nn, jnp):
    return dict(model=nn.ConvLSTMCell(4, (3, 3)),
                args=((_x(1, 2, 5, 5, 4), _x(2, 2, 5, 5, 4)), _x(3, 2, 5, 5, 3)))


def rnn_lstm_lengths(nn, jnp):
    return dict(model=nn.RNN(nn.LSTMCell(5), return_carry=True), args=(_x(4, 3, 6, 3),),
                kwargs=dict(seq_lengths=np.array([6, 2, 4], np.int32)), grad=True)


def rnn_gru_reverse_time_major(nn, jnp):
    return dict(model=nn.RNN(nn.GRUCell(4), reverse=True, keep_order=True, time_major=True),
                args=(_x(5, 6, 2, 3),), kwargs=dict(seq_lengths=np.array([6, 3], np.int32)))


def bidirectional(nn, jnp):
    return dict(model=nn.Bidirectional(nn.RNN(nn.LSTMCell(4)), nn.RNN(nn.GRUCell(3))),
                args=(_x(6, 2, 5, 3),))


def scan_lstm(nn, jnp):
    class ScanLSTM(nn.Module):
        @nn.compact
        def __call__(self, carry, xs):
            cell = nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params",
                           split_rngs={"params": False}, in_axes=1, out_axes=1)(6)
            return cell(carry, xs)

    return dict(model=ScanLSTM(), args=((_x(1, 2, 6), _x(2, 2, 6)), _x(7, 2, 5, 3)), grad=True)


def scan_stacked_layers(nn, jnp):
    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x, _):
            return nn.tanh(nn.Dense(4)(x)), None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            stack = nn.scan(Layer, variable_axes={"params": 0}, split_rngs={"params": True},
                            length=3)
            return stack(name="stack")(x, None)[0]

    return dict(model=Stack(), args=(_x(8, 2, 4),), grad=True)


def vmap_ensemble(nn, jnp):
    class Ensemble(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.vmap(nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True},
                            in_axes=None, out_axes=0, axis_size=3)
            return dense(4)(x)

    return dict(model=Ensemble(), args=(_x(9, 2, 3),))


def vmap_shared(nn, jnp):
    class Shared(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.vmap(nn.Dense, variable_axes={"params": None},
                            split_rngs={"params": False}, in_axes=1, out_axes=1)
            return dense(4)(x)

    return dict(model=Shared(), args=(_x(10, 2, 5, 3),))


def jit_dense(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.jit(nn.Dense)(3)(nn.Dense(4)(x))

    return dict(model=M(), args=(_x(11, 2, 3),))


def remat_mlp(nn, jnp):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.gelu(nn.Dense(5)(x)))

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(MLP)()(x)

    return dict(model=M(), args=(_x(12, 3, 4),), grad=True)


def cond_branches(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x, flag):
            def yes(mdl, x):
                return mdl.a(x)

            def no(mdl, x):
                return -mdl.b(x)

            if self.is_initializing():  # Flax's cond needs the variables made beforehand
                self.a(x), self.b(x)
            return nn.cond(flag, yes, no, self, x)

        def setup(self):
            self.a = nn.Dense(3)
            self.b = nn.Dense(3)

    return dict(model=M(), args=(_x(13, 2, 3), np.array(False)))


def switch_branches(nn, jnp):
    class M(nn.Module):
        def setup(self):
            self.layers = [nn.Dense(3), nn.Dense(3), nn.Dense(3)]

        def __call__(self, x, i):
            branches = [lambda mdl, x, k=k: mdl.layers[k](x) * (k + 1) for k in range(3)]
            if self.is_initializing():
                [layer(x) for layer in self.layers]
            return nn.switch(i, branches, self, x)

    return dict(model=M(), args=(_x(14, 2, 3), np.array(2, np.int32)))


def while_counter(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.Dense(3, name="dense")
            x = dense(x)

            def cond_fn(mdl, c):
                return c[0] < 4

            def body_fn(mdl, c):
                return c[0] + 1, jnp.tanh(mdl(c[1]))

            return nn.while_loop(cond_fn, body_fn, dense, (jnp.asarray(0), x))[1]

    return dict(model=M(), args=(_x(15, 2, 3),))


def map_variables_causal(nn, jnp):
    class CausalDense(nn.Module):
        @nn.compact
        def __call__(self, x):
            def mask(variables):
                if self.is_initializing():
                    return variables
                return {c: {k: (jnp.triu(v) if v.ndim == 2 else v) for k, v in t.items()}
                        for c, t in variables.items()}

            dense = nn.map_variables(nn.Dense, "params", mask, init=self.is_initializing())
            return dense(4)(x)

    return dict(model=CausalDense(), args=(_x(16, 2, 4),))


def lifted_grad_vjp(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.Dense(3)
            y = dense(x)

            def f(mdl, x):
                return (mdl(x) ** 2).sum()

            (gx,) = nn.grad(f, dense, x)
            val, (gx2,) = nn.value_and_grad(f, dense, x)
            out, bwd = nn.vjp(lambda mdl, x: mdl(x), dense, x)
            params_t, x_t = bwd(jnp.ones_like(out))
            prim, tan = nn.jvp(lambda mdl, x: mdl(x), dense, (x,), (jnp.ones_like(x),),
                               {"params": {"kernel": jnp.ones((x.shape[-1], 3)),
                                           "bias": jnp.ones((3,))}})
            return y, gx, val, gx2, params_t, x_t, tan

    return dict(model=M(), args=(_x(17, 2, 4),))


def custom_vjp_sign(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            def f(mdl, x):
                return mdl(x)

            def fwd(mdl, x):
                return nn.vjp(f, mdl, x)

            def bwd(vjp_fn, y_t):
                params_t, *inputs_t = vjp_fn(y_t)
                params_t = {c: {k: jnp.sign(v) for k, v in t.items()}
                            for c, t in params_t.items()}
                return (params_t, *inputs_t)

            sign_grad = nn.custom_vjp(f, forward_fn=fwd, backward_fn=bwd)
            return sign_grad(nn.Dense(2), x)

    return dict(model=M(), args=(_x(18, 3, 4),), grad=True)


def einsum(nn, jnp):
    return dict(model=nn.Einsum((3, 4, 5), "nta,hab->nthb"), args=(_x(19, 2, 6, 4),),
                grad=True)


def instance_norm(nn, jnp):
    return dict(model=nn.InstanceNorm(), args=(_x(20, 2, 4, 4, 3) * 2 + 1,))


def weight_norm(nn, jnp):
    return dict(model=nn.WeightNorm(nn.Dense(4)), args=(_x(21, 2, 3),), grad=True)


def spectral_norm(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x, update_stats):
            return nn.SpectralNorm(nn.Dense(4), n_steps=3)(x, update_stats=update_stats)

    return dict(model=M(), args=(_x(22, 2, 3), True), mutable=["batch_stats"])


def prelu(nn, jnp):
    return dict(model=nn.PReLU(negative_slope_init=0.2), args=(_x(23, 2, 5),))


def conv_local(nn, jnp):
    return dict(model=nn.ConvLocal(3, (3,), padding="SAME"), args=(_x(24, 2, 6, 2),),
                grad=True)


def self_attention(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            mask = nn.combine_masks(nn.make_causal_mask(jnp.ones(x.shape[:2])),
                                    nn.make_attention_mask(jnp.ones(x.shape[:2]) > 0,
                                                           jnp.arange(x.shape[1]) < 4))
            return nn.SelfAttention(num_heads=2, deterministic=True)(x, mask=mask)

    return dict(model=M(), args=(_x(25, 2, 5, 4),))


def attention_bias_dropout(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, q, k, v, bias):
            mask = nn.make_causal_mask(jnp.ones(q.shape[:2]))
            return nn.dot_product_attention(q, k, v, bias=bias, mask=mask, dropout_rate=0.3,
                                            dropout_rng=self.make_rng("dropout"),
                                            deterministic=False)

    return dict(model=M(), args=(_x(26, 2, 4, 2, 3), _x(27, 2, 4, 2, 3), _x(28, 2, 4, 2, 3),
                                 _x(29, 2, 2, 4, 4)), rngs={"dropout": 7})


def pooling(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            pad = ((1, 1), (0, 1))
            return (nn.avg_pool(x, (3, 2), (2, 1), pad, count_include_pad=False),
                    nn.avg_pool(x, (3, 2), (2, 1), pad),
                    nn.max_pool(x, (2, 2), padding="SAME"),
                    nn.pool(x, 0.0, jnp.add, (2, 2), (1, 1), "VALID"))

    return dict(model=M(), args=(_x(30, 2, 5, 4, 3),))


ACTIVATIONS = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
               "hard_tanh", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "relu",
               "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus",
               "standardize", "swish", "tanh", "normalize"]


def activations(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return tuple(getattr(nn, name)(x) for name in ACTIVATIONS) + (
                nn.one_hot(jnp.asarray([0, 2]), 3),)

    return dict(model=M(), args=(_x(31, 2, 6) * 3,))


def scan_sow_and_dropout(nn, jnp):
    class Step(nn.Module):
        @nn.compact
        def __call__(self, c, x):
            h = nn.Dense(3)(x) + c
            h = nn.Dropout(0.5, deterministic=False)(h)
            self.sow("intermediates", "h", h)
            return h, h * 2

    class M(nn.Module):
        @nn.compact
        def __call__(self, xs):
            scan = nn.scan(Step, variable_broadcast="params", variable_axes={"intermediates": 0},
                           split_rngs={"params": False, "dropout": True})
            return scan(name="scan")(jnp.zeros((xs.shape[1], 3)), xs)

    return dict(model=M(), args=(_x(32, 4, 2, 3),), rngs={"dropout": 5},
                mutable=["intermediates"])


def vmap_batchnorm_ensemble(nn, jnp):
    class Member(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.BatchNorm(use_running_average=False)(nn.Dense(3)(x))

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            ens = nn.vmap(Member, variable_axes={"params": 0, "batch_stats": 0},
                          split_rngs={"params": True}, in_axes=0, out_axes=0)
            return ens(name="ens")(x)

    return dict(model=M(), args=(_x(33, 2, 5, 4),), mutable=["batch_stats"])


def remat_static_sequential(nn, jnp):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            x = nn.Dense(4)(x)
            return nn.relu(x) if train else nn.tanh(x)

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.remat(Block, static_argnums=(2,))()(x, True)
            seq = nn.remat(nn.Sequential)([nn.Dense(3), nn.gelu, nn.Dense(2)])
            return seq(y)

    return dict(model=M(), args=(_x(34, 3, 4),), grad=True)


def while_carry_state(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            dense = nn.Dense(x.shape[-1], name="dense")
            dense(x)

            def cond_fn(mdl, c):
                return mdl.variables["params"]["bias"].shape[0] + c[0] < 6

            def body_fn(mdl, c):
                return c[0] + 1, jnp.sin(mdl(c[1]))

            return nn.while_loop(cond_fn, body_fn, dense, (jnp.asarray(0), x))

    return dict(model=M(), args=(_x(35, 2, 3),))


def jit_in_setup(nn, jnp):
    class M(nn.Module):
        def setup(self):
            self.first = nn.jit(nn.Dense)(4)
            self.second = nn.jit(nn.Dense)(2)

        def __call__(self, x):
            return self.second(nn.relu(self.first(x)))

    return dict(model=M(), args=(_x(36, 2, 3),), grad=True)


def remat_scan_blocks(nn, jnp):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.tanh(nn.Dense(4)(x)) + x

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Block, lengths=(2, 3))(name="blocks")(x)

    return dict(model=M(), args=(_x(37, 2, 4),), grad=True)


def while_split_rngs(nn, jnp):
    class Noisy(nn.Module):
        @nn.compact
        def __call__(self, c):
            return nn.Dropout(0.5, deterministic=self.is_initializing())(jnp.ones_like(c))

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            def cond_fn(mdl, c):
                return c[0] < 3

            def body_fn(mdl, c):
                return c[0] + 1, c[1] + mdl(c[1])

            body = Noisy(name="noisy")
            return nn.while_loop(cond_fn, body_fn, body, (jnp.asarray(0), x),
                                 split_rngs={"dropout": True})[1]

    return dict(model=M(), args=(_x(38, 2, 6),), rngs={"dropout": 9})


def scan_broadcast_reverse(nn, jnp):
    class Step(nn.Module):
        @nn.compact
        def __call__(self, c, x, bias):
            c = nn.GRUCell(3)(c, x)[0] + bias
            return c, c * 2

    class M(nn.Module):
        @nn.compact
        def __call__(self, xs, bias):
            scan = nn.scan(Step, variable_broadcast="params", split_rngs={"params": False},
                           in_axes=(1, nn.broadcast), out_axes=2, reverse=True, unroll=2)
            return scan()(jnp.zeros((xs.shape[0], 3)), xs, bias)

    return dict(model=M(), args=(_x(39, 2, 5, 4), _x(40, 3)), grad=True)


def custom_vjp_nondiff(nn, jnp):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            def f(mdl, x, scale):
                return mdl(x) * scale

            def fwd(mdl, x, scale):
                return nn.vjp(lambda m, x: m(x) * scale, mdl, x)

            def bwd(scale, vjp_fn, y_t):
                params_t, x_t = vjp_fn(y_t)
                params_t = {c: {k: v * scale + 1.0 for k, v in t.items()}
                            for c, t in params_t.items()}
                return params_t, -x_t

            g = nn.custom_vjp(f, forward_fn=fwd, backward_fn=bwd, nondiff_argnums=(2,))
            return g(nn.Dense(3), x, 3.0)

    return dict(model=M(), args=(_x(41, 2, 4),), grad=True)


def bidirectional_lengths_carry(nn, jnp):
    return dict(model=nn.Bidirectional(nn.RNN(nn.OptimizedLSTMCell(3), unroll=2),
                                       nn.RNN(nn.SimpleCell(3)), return_carry=True),
                args=(_x(42, 3, 5, 2),), kwargs=dict(seq_lengths=np.array([5, 1, 3], np.int32)),
                grad=True)


# --- nested lifted transformations: init keys follow Flax's shared PRNG counters ------------

def _rs_block(nn, jnp, dropout=False):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.tanh(nn.Dense(4)(x))
            if dropout:
                y = nn.Dropout(0.5, deterministic=False)(y)
            return nn.Dense(4, use_bias=False)(y) + x
    return Block


def remat_scan_single(nn, jnp):
    Block = _rs_block(nn, jnp)

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Block, lengths=(3,))(name="blocks")(x)

    return dict(model=M(), args=(_x(43, 2, 4),), grad=True)


def remat_scan_deep_dropout(nn, jnp):
    Block = _rs_block(nn, jnp, dropout=True)

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Block, lengths=(2, 2, 2))(name="blocks")(x)

    return dict(model=M(), args=(_x(44, 2, 4),), rngs={"dropout": 5}, grad=True)


def remat_scan_broadcast(nn, jnp):
    Block = _rs_block(nn, jnp)

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Block, lengths=(2, 3), variable_broadcast="params",
                                 split_rngs={"params": False})(name="blocks")(x)

    return dict(model=M(), args=(_x(45, 2, 4),), grad=True)


def remat_scan_unsplit(nn, jnp):
    Block = _rs_block(nn, jnp)

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Block, lengths=(3, 1, 2),
                                 split_rngs={"params": False})(name="blocks")(x)

    return dict(model=M(), args=(_x(46, 2, 4),))


def _scanned(nn, body, length=2):
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.scan(body, variable_axes={"params": 0}, split_rngs={"params": True},
                           length=length)(name="s")(x, None)[0]
    return M()


def remat_in_scan(nn, jnp):
    class B(nn.Module):
        @nn.compact
        def __call__(self, c):
            return nn.tanh(nn.Dense(4)(c))

    class L(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            c = nn.Dense(4)(c)
            return nn.remat(B)()(c) + nn.Dense(4)(c), None

    return dict(model=_scanned(nn, L), args=(_x(47, 2, 4),), grad=True)


def vmap_in_scan(nn, jnp):
    class L(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            c = nn.Dense(4)(c)
            v = nn.vmap(nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True},
                        in_axes=0)
            return nn.tanh(v(4)(c)), None

    return dict(model=_scanned(nn, L, 3), args=(_x(48, 2, 4),), grad=True)


def scan_in_vmap(nn, jnp):
    class L(nn.Module):
        @nn.compact
        def __call__(self, c, x):
            return nn.tanh(nn.Dense(4)(c)) + x, None

    class Inner(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(4)(x)
            return nn.scan(L, variable_axes={"params": 0}, split_rngs={"params": True},
                           in_axes=nn.broadcast, length=3)()(x, x)[0]

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.vmap(Inner, variable_axes={"params": 0}, split_rngs={"params": True},
                           in_axes=0)(name="v")(x)

    return dict(model=M(), args=(_x(49, 2, 4),), grad=True)


def scan_broadcast_in_scan(nn, jnp):
    class L(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.tanh(nn.Dense(4)(c)), None

    class O(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            c = nn.Dense(4)(c)
            return nn.scan(L, variable_broadcast="params", split_rngs={"params": False},
                           length=2)()(c, None)[0], None

    return dict(model=_scanned(nn, O), args=(_x(50, 2, 4),), grad=True)


def jit_in_scan(nn, jnp):
    class L(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            c = nn.jit(nn.Dense)(4)(nn.Dense(4)(c))
            return nn.tanh(c), None

    return dict(model=_scanned(nn, L), args=(_x(51, 2, 4),))


def map_variables_in_scan(nn, jnp):
    class L(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            c = nn.Dense(4)(c)
            D = nn.map_variables(nn.Dense, "params", lambda v: v, lambda v: v, init=True)
            return nn.tanh(D(4)(c)), None

    return dict(model=_scanned(nn, L), args=(_x(52, 2, 4),))


def scan_dropout_twice(nn, jnp):
    class L(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            drop = nn.Dropout(0.5, deterministic=False)
            c = drop(nn.Dense(4)(c))
            return drop(c) + 1.0, None

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.scan(L, variable_broadcast="params",
                           split_rngs={"params": False, "dropout": True},
                           length=3)(name="s")(x, None)[0]

    return dict(model=M(), args=(_x(53, 2, 4),), rngs={"dropout": 3})


NESTED_CASES = [remat_scan_single, remat_scan_deep_dropout, remat_scan_broadcast,
                remat_scan_unsplit, remat_in_scan, vmap_in_scan, scan_in_vmap,
                scan_broadcast_in_scan, jit_in_scan, map_variables_in_scan, scan_dropout_twice]


CASES = [lstm_cell, optimized_lstm_cell, gru_cell, simple_cell, mgu_cell, mgu_cell_no_reset,
         conv_lstm_cell, rnn_lstm_lengths, rnn_gru_reverse_time_major, bidirectional, scan_lstm,
         scan_stacked_layers, vmap_ensemble, vmap_shared, jit_dense, remat_mlp, cond_branches,
         switch_branches, while_counter, map_variables_causal, lifted_grad_vjp, custom_vjp_sign,
         einsum, instance_norm, weight_norm, spectral_norm, prelu, conv_local, self_attention,
         attention_bias_dropout, pooling, activations, scan_sow_and_dropout,
         vmap_batchnorm_ensemble, remat_static_sequential, while_carry_state, jit_in_setup,
         remat_scan_blocks, while_split_rngs, scan_broadcast_reverse,
         custom_vjp_nondiff, bidirectional_lengths_carry] + NESTED_CASES


def flatten(tree, prefix=""):
    """{"a/b/0": leaf} for nested dicts / tuples / lists (None leaves are skipped)."""
    out = {}
    if isinstance(tree, dict) or hasattr(tree, "items"):
        for k in sorted(tree):
            out.update(flatten(tree[k], f"{prefix}{k}/"))
    elif isinstance(tree, (tuple, list)):
        for i, v in enumerate(tree):
            out.update(flatten(v, f"{prefix}{i}/"))
    elif tree is not None:
        out[prefix.rstrip("/")] = np.asarray(tree)
    return out


def run_case(case, nn, jnp, jax, variables=None):
    """(variables from init with PRNGKey(0), {"out/..": .., "upd/..": .., "grad/..": ..}); with
    `variables` given, apply uses them instead of init's."""
    spec = case(nn, jnp)
    model = spec["model"]
    args = jax.tree_util.tree_map(jnp.asarray, spec["args"])
    kwargs = jax.tree_util.tree_map(jnp.asarray, spec.get("kwargs", {}))
    init_vars = model.init(jax.random.PRNGKey(0), *args, **kwargs)
    if variables is None:
        variables = init_vars
    rngs = {k: jax.random.PRNGKey(v) for k, v in spec.get("rngs", {}).items()}
    mutable = spec.get("mutable", False)
    result = model.apply(variables, *args, rngs=rngs, mutable=mutable, **kwargs)
    out, upd = (result if mutable else (result, None))
    record = {f"out/{k}": v for k, v in flatten(out).items()}
    if upd is not None:
        record.update({f"upd/{k}": v for k, v in flatten(upd).items()})
    if spec.get("grad"):
        floats = [i for i, a in enumerate(args) if jax.tree_util.tree_leaves(a) and all(
            jnp.issubdtype(leaf.dtype, jnp.floating) for leaf in jax.tree_util.tree_leaves(a))]

        def loss(params, fargs):
            full = list(args)
            for i, a in zip(floats, fargs):
                full[i] = a
            y = model.apply(dict(variables, params=params), *full, rngs=rngs, **kwargs)
            return sum((leaf.astype(jnp.float32) ** 2).sum()
                       for leaf in jax.tree_util.tree_leaves(y))

        g = jax.grad(loss, argnums=(0, 1))(variables["params"], tuple(args[i] for i in floats))
        record.update({f"grad/{k}": v for k, v in flatten(g).items()})
    return init_vars, record


def compare_with_golden(case, nn, jnp, jax, gold, rtol=2e-5, atol=2e-5):
    """(init problems, apply problems) of our `nn` against Flax's recorded arrays: init is
    compared leaf by leaf (rtol 1e-5); apply outputs / updates / gradients are computed with
    Flax's init variables loaded, so they are checked even where init differs."""
    name = case.__name__
    ours, _ = run_case(case, nn, jnp, jax)
    flat = flatten(ours)
    theirs = {k[len(name) + 6:]: gold[k] for k in gold.files if k.startswith(name + "/init/")}
    init_bad = [("keys", sorted(set(flat) ^ set(theirs)))] if set(flat) != set(theirs) else []
    for k in sorted(set(flat) & set(theirs)):
        if flat[k].shape != theirs[k].shape or not np.allclose(flat[k], theirs[k], rtol=1e-5,
                                                              atol=1e-6):
            init_bad.append(k)

    def load(tree, prefix=""):
        if isinstance(tree, dict):
            return {k: load(v, f"{prefix}{k}/") for k, v in tree.items()}
        return jnp.asarray(theirs[prefix.rstrip("/")])

    apply_bad = []
    if set(flat) != set(theirs):
        return init_bad, ["variables have different names; apply not compared"]
    _, record = run_case(case, nn, jnp, jax, variables=load(ours))
    for k in gold.files:
        if not k.startswith(name + "/") or k.startswith(name + "/init/"):
            continue
        key = k[len(name) + 1:]
        if key not in record:
            apply_bad.append(("missing", key))
        elif np.shape(record[key]) != gold[k].shape or not np.allclose(
                np.asarray(record[key], np.float64), gold[k], rtol=rtol, atol=atol):
            apply_bad.append((key, np.asarray(record[key]).ravel()[:4], gold[k].ravel()[:4]))
    extra = set(record) - {k[len(name) + 1:] for k in gold.files if k.startswith(name + "/")}
    apply_bad += [("extra", k) for k in sorted(extra)]
    return init_bad, apply_bad

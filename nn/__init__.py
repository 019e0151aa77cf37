"""nn: Flax-linen-style neural network modules on corejax.

    import nn
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(10)(nn.relu(nn.Dense(128)(x)))
    params = MLP().init(key, x)
"""
from corejax.nn.functions import (  # noqa: F401
    relu, relu6, sigmoid, log_sigmoid, softplus, soft_sign, silu, swish, gelu, elu, selu, celu,
    leaky_relu, hard_tanh, hard_sigmoid, hard_silu, hard_swish, glu, tanh, softmax,
    log_softmax, logsumexp, one_hot, standardize, sparse_plus, squareplus, mish,
)
from nn import initializers  # noqa: F401
from nn.module import (  # noqa: F401
    Module, compact, nowrap, Variable, merge_param, DenyList, NNError, ScopeParamNotFoundError,
    ScopeParamShapeError, ScopeCollectionNotFound, ScopeVariableNotFound,
    ModifyScopeVariableError, InvalidRngError, NameInUseError, AssignSubModuleError,
    CallCompactUnboundModuleError, SetAttributeFrozenModuleError,
    ApplyScopeInvalidVariablesTypeError,
)
from nn.linear import Dense, DenseGeneral, Conv, ConvTranspose, Embed  # noqa: F401
from nn.normalization import BatchNorm, LayerNorm, GroupNorm, RMSNorm  # noqa: F401
from nn.stochastic import Dropout  # noqa: F401
from nn.pooling import pool, avg_pool, max_pool, min_pool  # noqa: F401
from nn.combinators import Sequential  # noqa: F401
from nn.attention import (  # noqa: F401
    dot_product_attention_weights, dot_product_attention, MultiHeadDotProductAttention,
    MultiHeadAttention, SelfAttention, make_attention_mask, make_causal_mask, combine_masks,
)
from nn.summary import tabulate, param_count  # noqa: F401
from nn.initializers import zeros_init, ones_init  # noqa: F401
from nn.transforms import (  # noqa: F401
    jit, vmap, scan, remat, checkpoint, map_variables, broadcast, while_loop, cond, switch,
    grad, value_and_grad, vjp, jvp, custom_vjp,
)
from nn.recurrent import (  # noqa: F401
    RNNCellBase, LSTMCell, OptimizedLSTMCell, SimpleCell, GRUCell, MGUCell, ConvLSTMCell, RNN,
    Bidirectional,
)
from nn.functional import apply, init, init_with_output, intercept_methods  # noqa: F401
from nn import batch_apply, kw_only_dataclasses, spmd  # noqa: F401
from nn.batch_apply import BatchApply  # noqa: F401
from nn import core, dtypes, meta, serialization, struct  # noqa: F401
from nn.core import FrozenDict  # noqa: F401
from nn.meta import (  # noqa: F401
    Partitioned, PARTITION_NAME, with_partitioning, unbox, get_partition_spec, get_sharding,
)
from nn.spmd import (  # noqa: F401
    LogicallyPartitioned, with_logical_partitioning, logical_to_mesh_axes, logical_to_mesh,
    logical_to_mesh_sharding, logical_axis_rules, set_logical_axis_rules,
    get_logical_axis_rules, with_logical_constraint,
)
from nn.initializers import zeros, ones  # noqa: F401
from nn.linear import ConvLocal, Einsum  # noqa: F401
from nn.normalization import InstanceNorm, WeightNorm, SpectralNorm  # noqa: F401
from nn.activation import PReLU, normalize  # noqa: F401
from nn.transforms import remat_scan, fold_rngs, add_metadata_axis  # noqa: F401
from nn.scopes import (  # noqa: F401
    share_scope, compact_name_scope, enable_named_call, disable_named_call, override_named_call,
    named_call,
)

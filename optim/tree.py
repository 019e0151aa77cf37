"""optax.tree: pytree arithmetic, reductions, casting, random draws and state access, under
Optax's short names (optim.tree.add, optim.tree.norm, optim.tree.get, ...)."""
from optim import _tree_math as _m
from optim import _tree_state as _s

__all__ = ["add", "add_scale", "allclose", "batch_shape", "bias_correction", "cast",
           "cast_like", "clip", "conj", "div", "dtype", "full_like", "get",
           "get_all_with_path", "map_params", "max", "min", "mul", "norm", "ones_like",
           "random_like", "real", "scale", "set", "size", "split_key_like", "sub", "sum",
           "unwrap_random_key_data", "update_infinity_moment", "update_moment",
           "update_moment_per_elem_norm", "vdot", "where", "zeros_like"]

add = _m.tree_add
add_scale = _m.tree_add_scale
allclose = _m.tree_allclose
batch_shape = _m.tree_batch_shape
bias_correction = _m.tree_bias_correction
cast = _m.tree_cast
cast_like = _m.tree_cast_like
clip = _m.tree_clip
conj = _m.tree_conj
div = _m.tree_div
dtype = _m.tree_dtype
full_like = _m.tree_full_like
max = _m.tree_max
min = _m.tree_min
mul = _m.tree_mul
norm = _m.tree_norm
ones_like = _m.tree_ones_like
random_like = _m.tree_random_like
real = _m.tree_real
scale = _m.tree_scale
size = _m.tree_size
split_key_like = _m.tree_split_key_like
sub = _m.tree_sub
sum = _m.tree_sum
unwrap_random_key_data = _m.tree_unwrap_random_key_data
update_infinity_moment = _m.tree_update_infinity_moment
update_moment = _m.tree_update_moment
update_moment_per_elem_norm = _m.tree_update_moment_per_elem_norm
vdot = _m.tree_vdot
where = _m.tree_where
zeros_like = _m.tree_zeros_like
get = _s.tree_get
get_all_with_path = _s.tree_get_all_with_path
map_params = _s.tree_map_params
set = _s.tree_set

"""Conformance cases for jax.ops (segment reductions): dropped and clipped out-of-range ids,
empty segments (the reductions' identities), integer data, trailing dimensions."""
import cases
from cases import BASIC, FULL, NOGRAD, SKIP_REASONS, add, case

cases.MODULES.append("ops")

for name in ("segment_sum", "segment_max", "segment_min", "segment_prod"):
    fn = f"ops.{name}"
    diff = NOGRAD if name == "segment_prod" else FULL    # scatter_mul: unique indices only
    add(case(fn, "f32[5]", "i32[5]:idx3", 3, static=(2,), transforms=diff),
        case(fn, "f32[5,2]", "i32[5]:idx3", 4, static=(2,), transforms=diff,
             label="empty_segment"),
        case(fn, "f32[5]", "i32[5]:idxm3", 3, static=(2,), transforms=diff,
             label="negative_ids_dropped"),
        # (JAX 0.10.2's max / min derivative is inf at an id clipped into range: values
        # only there; in-range ids under clip are differentiated below)
        case(fn, "f32[4]", "i32[4]:idxm3", 2, static=(2,), kwargs={"mode": "clip"},
             transforms=NOGRAD, label="clip"),
        case(fn, "f32[4]", "i32[4]:idx2", 2, static=(2,), kwargs={"mode": "clip"},
             transforms=diff, label="clip_in_range"),
        case(fn, "i32[5]", "i32[5]:idx3", 3, static=(2,), transforms=NOGRAD, label="int"),
        case(fn, "f32[5]", "i32[5]:idx3", 3, static=(2,), kwargs={"bucket_size": 2},
             transforms=BASIC, label="buckets"),
        case(fn, "f32[5]", "i32[5]:idx3", 3, static=(2,),
             kwargs={"indices_are_sorted": False, "unique_indices": False},
             transforms=BASIC, label="flags"))

SKIP_REASONS["ops"] = {
    n: "imported helper, not a jax.ops function" for n in (
        "annotations", "core", "dtypes", "jnp", "np", "operator", "GatherScatterMode")}

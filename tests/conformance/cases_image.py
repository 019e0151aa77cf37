"""Conformance cases for jax.image: resize up, down and mixed with every method, with and
without antialiasing, integer images, unchanged dimensions; scale_and_translate with
traced scales and translations (differentiated too), on all or some dimensions."""
import cases
from cases import FULL, NOGRAD, SKIP_REASONS, add, case

cases.MODULES.append("image")

METHODS = ("nearest", "linear", "cubic", "lanczos3", "lanczos5", "area")

for method in METHODS:
    add(case("image.resize", "f32[3,4]", (5, 7), method, transforms=FULL, ulp=16,
             label=f"{method}_up"),
        case("image.resize", "f32[6,5]", (4, 2), method, transforms=FULL, ulp=16,
             label=f"{method}_down"),
        case("image.resize", "f32[6,5]", (4, 2), method, kwargs={"antialias": False},
             transforms=FULL, ulp=16, label=f"{method}_down_no_antialias"),
        case("image.resize", "f32[2,5,3]", (4, 2, 3), method, transforms=FULL, ulp=16,
             label=f"{method}_mixed"),
        case("image.resize", "i32[3,4]", (5, 2), method, transforms=NOGRAD, ulp=16,
             label=f"{method}_int"))

add(case("image.resize", "f32[3]", (3,), "linear", transforms=FULL, label="unchanged"),
    case("image.resize", "f16[4]", (6,), "cubic", transforms=NOGRAD, ulp=4, label="f16"),
    case("image.resize", "f32[4]", (6,), "bilinear", transforms=NOGRAD, label="alias"))

# The derivatives in scale and translation sum many kernel slopes that cancel: float32 keeps
# about 1e-5 of them (corejax's lanczos5 translation gradient is within 1e-5 of float64,
# JAX's within 1.4e-4), hence the wider budget for the lanczos kernels.
for method in METHODS[1:]:
    ulp = 2048 if method.startswith("lanczos") else 64
    add(case("image.scale_and_translate", "f32[4,5]", (6, 3), (0, 1), "f32[2]:pos", "f32[2]",
             method, transforms=FULL, ulp=ulp, label=method),
        case("image.scale_and_translate", "f32[4,5]", (4, 7), (1,), "f32[1]:pos", "f32[1]",
             method, kwargs={"antialias": False}, transforms=FULL, ulp=ulp,
             label=f"{method}_dim1_no_antialias"))

SKIP_REASONS["image"] = {
    "ResizeMethod": "an enum (its members are passed by name in the resize cases)",
    **{n: "imported helper, not a jax.image function" for n in (
        "Sequence", "annotations", "core", "dtypes", "enum", "jnp", "np")},
}

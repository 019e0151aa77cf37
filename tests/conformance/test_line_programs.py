"""The programs of line_programs.py (AOT stages, pure_callback) against JAX's lines
(golden_line_programs.json, made by gen_line_programs.py), plus checks of corejax-specific
output (the compiler's text, memory statistics)."""
import json
import os
import sys

import pytest

import corejax
import corejax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import line_programs  # noqa: E402

with open(os.path.join(HERE, "golden_line_programs.json")) as _fh:
    GOLDEN = json.load(_fh)["programs"]


@pytest.mark.parametrize("name", sorted(line_programs.PROGRAMS))
def test_lines_match_jax(name):
    got = line_programs.PROGRAMS[name](corejax, jnp)
    expected = GOLDEN[name]
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"{name} line {i}"


def test_lowered_text_and_memory():
    c = corejax.jit(lambda x: jnp.sin(x) * 2.0).lower(jnp.ones(4)).compile()
    assert "sin" in c.as_text()
    stats = c.memory_analysis()
    assert stats.argument_size_in_bytes == 16 and stats.output_size_in_bytes == 16
    with pytest.raises(ValueError, match="dialect"):
        corejax.jit(jnp.sin).lower(jnp.ones(2)).as_text(dialect="hlo")


def test_callback_result_shape_mismatch_names_the_callback():
    def wrong(x):
        return jnp.ones(4)
    with pytest.raises(RuntimeError, match="wrong.*shape"):
        corejax.pure_callback(wrong, corejax.ShapeDtypeStruct((3,), jnp.float32), jnp.ones(3))

"""jit(f).trace / .lower / .compile against JAX (golden_stages.json, made by gen_stages.py):
the traced structures, output info, argument checks of a Compiled, flop counts, donation."""
import json
import os
import sys

import pytest

import corejax
import corejax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stages_program  # noqa: E402

with open(os.path.join(HERE, "golden_stages.json")) as _fh:
    GOLDEN = json.load(_fh)["lines"]
LINES = stages_program.run(corejax, jnp)


@pytest.mark.parametrize("i", range(len(GOLDEN)))
def test_stage_line_matches_jax(i):
    assert LINES[i] == GOLDEN[i]


def test_lowered_text_and_memory():
    c = corejax.jit(lambda x: jnp.sin(x) * 2.0).lower(jnp.ones(4)).compile()
    assert "sin" in c.as_text()
    stats = c.memory_analysis()
    assert stats.argument_size_in_bytes == 16 and stats.output_size_in_bytes == 16
    with pytest.raises(ValueError, match="dialect"):
        corejax.jit(jnp.sin).lower(jnp.ones(2)).as_text(dialect="hlo")

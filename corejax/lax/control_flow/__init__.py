"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

Three primitives carry sub-jaxprs; each module defines one, followed by all of its rules:
- conditionals.py: `cond_p(index, *operands, branches)`; `cond`, `switch`.
- loops.py: `while_p(*cond_consts, *body_consts, *carry, cond_jaxpr, body_jaxpr, ...)`;
  `while_loop`, `fori_loop`.
- scans.py: `scan_p(*consts, *carry, *xs, jaxpr, length, reverse, num_consts, num_carry)`;
  `scan`, `map`, `associative_scan`.
common.py holds what they share: staging user functions (closed-over tracers become explicit
leading operands, so every rule sees them), memoized jvp / vmap / partial evaluation of
sub-jaxprs, fixpoints over loop-carried facts, and the carry type checks.

No lowering is registered here: the compiler runs these primitives as host steps (compiling
their sub-jaxprs), and their impls interpret the sub-jaxprs with the NumPy impls, the
reference path.
"""
from corejax.lax.control_flow.conditionals import cond, cond_p, switch
from corejax.lax.control_flow.loops import fori_loop, while_loop, while_p
from corejax.lax.control_flow.scans import associative_scan, map, scan, scan_p

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan",
           "cond_p", "while_p", "scan_p"]

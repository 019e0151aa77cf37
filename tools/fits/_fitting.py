"""What the fitting scripts share: Chebyshev nodes, Horner's rule on NumPy arrays and at an
mpmath point, and printing a coefficient tuple as fastmath's modules write it."""
import numpy as np


def chebyshev_nodes(a, b, n):
    """The n Chebyshev points of the first kind on [a, b], ascending."""
    k = np.arange(n)
    return ((a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n)))[::-1].copy()


def horner(x, coeffs):
    """The polynomial with `coeffs` (highest power first) at the points x."""
    acc = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def horner_mp(x, coeffs):
    """The polynomial with `coeffs` (highest power first, floats taken exactly) at the mpmath
    number x, in mpmath's precision."""
    import mpmath
    acc = mpmath.mpf(coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + mpmath.mpf(c)
    return acc


def fmt(name, coeffs, width=99):
    """`name = (c0, c1, ...)` wrapped at `width` columns, continuation lines aligned."""
    head = f"{name} = ("
    lines, line = [], head
    for i, c in enumerate(coeffs):
        item = repr(c) + (")" if i == len(coeffs) - 1 else ",")
        if len(line) + len(item) + 1 > width and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = " " * len(head)
        line += item + " "
    lines.append(line.rstrip())
    return "\n".join(lines)

"""corejax.scipy.linalg: jax.scipy.linalg on real float32 / float64 matrices. Factorizations,
solves, expm, polar and the complex-valued sqrtm, funm, rsf2csf and schur(output='complex')
are in _linalg.py, the special matrices (and the complex dft matrix) in _linalg_special.py."""
from corejax.scipy._linalg import (  # noqa: F401
    cho_factor, cho_solve, cholesky, det, eigh, eigh_tridiagonal, expm, expm_frechet, funm,
    hessenberg, inv, lu, lu_factor, lu_solve, polar, qr, qr_multiply, rsf2csf, schur, solve,
    solve_sylvester, solve_triangular, sqrtm, svd,
)
from corejax.scipy._linalg_special import (  # noqa: F401
    block_diag, circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion,
    hadamard, hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz,
)

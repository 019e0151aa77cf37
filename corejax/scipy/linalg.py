"""corejax.scipy.linalg: jax.scipy.linalg on real float32 / float64 matrices. Factorizations,
solves, expm and polar are in _linalg.py, the special matrices in _linalg_special.py. sqrtm,
funm, rsf2csf, dft and schur(output='complex') (complex results) raise NotImplementedError:
corejax has no complex numbers yet."""
from corejax.scipy._linalg import (  # noqa: F401
    cho_factor, cho_solve, cholesky, det, eigh, eigh_tridiagonal, expm, expm_frechet, funm,
    hessenberg, inv, lu, lu_factor, lu_solve, polar, qr, qr_multiply, rsf2csf, schur, solve,
    solve_sylvester, solve_triangular, sqrtm, svd,
)
from corejax.scipy._linalg_special import (  # noqa: F401
    block_diag, circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion,
    hadamard, hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz,
)

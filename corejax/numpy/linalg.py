"""corejax.numpy.linalg: NumPy's (and the array API's) linear algebra on corejax arrays, real
float32 / float64 with leading batch dimensions. Decompositions, solves and determinants are in
_linalg.py, norms and the array-API products in _linalg_norms.py. `eig` and `eigvals` return
complex results (LAPACK's geev)."""
from corejax.numpy._linalg import (  # noqa: F401
    cholesky, cond, det, eig, eigh, eigvals, eigvalsh, inv, lstsq, matrix_power, matrix_rank,
    pinv, qr, slogdet, solve, svd, svdvals, tensorinv, tensorsolve, EighResult, QRResult,
    SlogdetResult, SVDResult, EigResult,
)
from corejax.numpy._linalg_norms import (  # noqa: F401
    norm, vector_norm, matrix_norm, cross, outer, trace, diagonal, vecdot, matmul,
    matrix_transpose, tensordot, multi_dot,
)

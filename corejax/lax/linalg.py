"""corejax.lax.linalg: JAX's lax-level linear algebra on real float32 / float64 matrices (the
last two dimensions; leading dimensions are a batch). The functions live in
_linalg_functions.py, the primitives with their rules in _linalg_factor.py and
_linalg_spectral.py, qdwh in _linalg_qdwh.py, eig (complex results) in _linalg_eig.py."""
from corejax.lax._linalg_functions import (  # noqa: F401
    cholesky, cholesky_update, eig, eigh, hessenberg, householder_product, lu,
    lu_pivots_to_permutation, ormqr, qdwh, qr, schur, svd, symmetric_product, triangular_solve,
    tridiagonal, tridiagonal_solve, SvdAlgorithm, EighImplementation, EigImplementation,
    cholesky_p, cholesky_update_p, eigh_p, hessenberg_p, householder_product_p, lu_p,
    lu_pivots_to_permutation_p, qr_p, schur_p, svd_p, triangular_solve_p, tridiagonal_p,
    tridiagonal_solve_p,
)

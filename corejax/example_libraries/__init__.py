"""corejax.example_libraries: the small stax (layers) and optimizers libraries of
jax.example_libraries, with the same names, signatures and semantics."""

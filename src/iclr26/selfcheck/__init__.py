"""The package's built-in check (not a paper): a tiny LM trained briefly must beat the uniform-byte loss."""

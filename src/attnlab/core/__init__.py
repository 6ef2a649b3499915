"""The JAX-free core both sides share: config types and schema, the bundle format, the corpus file."""

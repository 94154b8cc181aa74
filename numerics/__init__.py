"""Paper-agnostic numerics: quadrature, exponential families, deformed exponentials, convex problems
and their dual solvers, optimal transport, attention layers.  Imports nothing else of attnlab."""

"""Claims of "Deciphering Attention Mechanisms: Optimization and Fenchel Dual Solutions" (`fenchel.*`), one module per part of the paper: compare, duality, kl_problem, ot, transformers."""

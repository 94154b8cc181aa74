"""Claims of "Kernel Multimodal Continuous Attention" (`kernel.*`), one module per part of the paper: compare, convergence, exp_family, instances, propositions."""

"""Claims of "Bidirectional Attention as a Mixture of Continuous Word Experts" (`bidir.*`), one module per part of the paper: analogy, compare, equivalences, toy_corpus."""

"""attnlab: checks, computes and reproduces four papers that read attention as statistical inference."""
__version__ = "0.1.0"

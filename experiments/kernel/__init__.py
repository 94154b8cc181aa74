"""Experiments of the kernel paper: one runner module per `attnlab run kernel-<name>`."""

"""Models (torch modules), data loaders, training, one runner per experiment, the papers' numbers."""

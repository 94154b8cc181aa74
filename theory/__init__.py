"""The claims, one module (or package) per paper.  Importing a module registers its claims in
attnlab.catalog; `attnlab.catalog.discover()` imports them all.  Keep top-level imports light
(numpy only): heavy libraries are imported inside the checks."""

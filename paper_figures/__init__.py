"""One module per paper (efa, bidir, fenchel, kernel) with FIGURES = {name: render(outdir) -> [paths]};
`attnlab figures` renders them into this folder."""

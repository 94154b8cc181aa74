"""The committed figures are what the committed records and the library give: `attnlab figures --check`
draws each figure without writing it and compares its content digest (paper_figures/style.py: texts and
data to four significant digits, rounding-level numbers as 0, not pixels) with the digest its committed PNG
carries.  A figure drawn from records that later moved (a seed added, a record re-run), or from a library
function whose numbers changed, is reported stale, and the README tour's `attnlab figures --check` line
(tests/test_readme_tour.py, which runs it on the committed figures) fails until it is redrawn; the tests here
check what --check reports.  (The figures print rounding-level errors as "< tolerance", never as digits
another BLAS would print otherwise.)"""
from __future__ import annotations

import shutil

from attnlab.cli import main
from attnlab.paper_figures import style


def test_check_names_stale_missing_and_undigested_figures(tmp_path, capsys):
    from PIL import Image

    assert main(["figures", "--only", "table2", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    # one figure's file replaced by the other's: stale; a PNG without a digest; a figure without a file
    shutil.copy(tmp_path / "fenchel_exp_ot_vit.png", tmp_path / "bidir_exp_table2.png")
    assert main(["figures", "--check", "--only", "table2", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out == [f"stale      {tmp_path / 'bidir_exp_table2.png'}", f"current    {tmp_path / 'fenchel_exp_ot_vit.png'}"]
    # the summary names the figure to redraw by its name (table2), not its file's (bidir_exp_table2)
    assert f"`attnlab figures --only table2 --out {tmp_path}`" in captured.err
    Image.new("RGB", (4, 4)).save(tmp_path / "fenchel_exp_ot_vit.png")
    (tmp_path / "bidir_exp_table2.png").unlink()
    assert main(["figures", "--check", "--only", "table2", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"missing    {tmp_path / 'bidir_exp_table2.png'}", f"no digest  {tmp_path / 'fenchel_exp_ot_vit.png'}"]
    (tmp_path / "fenchel_exp_ot_vit.png").write_text("not a PNG")
    assert main(["figures", "--check", "--only", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"unreadable {tmp_path / 'fenchel_exp_ot_vit.png'}"]
    # --check writes nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fenchel_exp_ot_vit.png"]


def test_unknown_figure_names_the_nearest(capsys):
    # a file stem is not a figure name: the nearest names are suggested
    assert main(["figures", "--only", "efa_exp_fig6", "fenchel_exp_pretrained"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "(did you mean exp_fig6, fenchel-exp-pretrained?)" in err[0]


def test_check_refuses_a_missing_folder_and_vector(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for argv, words in ((["--out", str(tmp_path / "none")], "no such folder"), (["--vector"], "--check writes no file"),
                        (["--out", str(tmp_path / "file")], "is a file, not a folder")):
        assert main(["figures", "--check", "--only", "table2", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "none").exists()


def _figure(ys, title="t", dpi=100):
    plt = style.pyplot()
    fig, ax = plt.subplots(figsize=style.size(1, 2.0), dpi=dpi)
    ax.errorbar([1, 2, 3], ys, yerr=[0.1, 0.2, 0.3], marker="o")
    ax.bar([1, 2], [0.5, 0.25])
    ax.set_title(title)
    ax.annotate("a", (1, ys[0]))
    d = style.content_digest(fig)
    plt.close(fig)
    return d


def test_digest_follows_what_is_drawn_not_how():
    base = _figure([1.0, 2.0, 3.0])
    assert _figure([1.0, 2.0, 3.0], dpi=300) == base                  # the resolution is not content
    assert _figure([1.0 + 1e-12, 2.0, 3.0]) == base                   # nor the last bits of a number
    assert _figure([1e-17, 2.0, 3.0]) == _figure([-1e-17, 2.0, 3.0]) == _figure([0.0, 2.0, 3.0])  # nor 0's
    assert _figure([1.0, 2.001, 3.0]) != base                         # a moved point is
    assert _figure([1.0, 2.0, 3.0], title="u") != base                # and a changed text


def test_written_png_carries_the_digest_it_was_drawn_with(tmp_path):
    plt = style.pyplot()
    fig, ax = plt.subplots(figsize=style.size(1, 2.0))
    ax.plot([0, 1], [1, 0])
    digest = style.content_digest(fig)
    (png,) = style.save(fig, tmp_path, "x.png")
    assert style.png_digest(png) == digest


def test_check_names_a_figure_whose_image_changed_after_it_was_drawn(tmp_path, capsys):
    """A PNG whose pixels were replaced (a blank image carrying the committed content digest) or edited was
    reported current: each PNG also carries the digest of its own pixels, written with it."""
    from PIL import Image, PngImagePlugin

    assert main(["figures", "--only", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    path = tmp_path / "fenchel_exp_ot_vit.png"
    assert style.png_pixels_intact(path) is True
    with Image.open(path) as im:
        info = PngImagePlugin.PngInfo()
        for key, value in im.text.items():
            info.add_text(key, value)
        blank = Image.new(im.mode, im.size, "white" if im.mode in ("RGB", "RGBA") else 0)
        edited = im.copy()
    blank.save(path, pnginfo=info)
    assert main(["figures", "--check", "--only", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"modified   {path}"]
    edited.putpixel((0, 0), (0, 0, 0, 255) if edited.mode == "RGBA" else 0 if edited.mode in ("L", "P") else (0, 0, 0))
    edited.save(path, pnginfo=info)
    assert main(["figures", "--check", "--only", "fenchel-exp-ot-vit", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"modified   {path}"]

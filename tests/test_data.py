"""The data layer: lookup order, checksums, clear errors."""
import gzip
import shutil

import pytest

from attnlab.experiments import data as D


def test_unknown_dataset():
    with pytest.raises(ValueError, match="valid: movielens-100k"):
        D.locate("no-such-set")


def test_missing_file_error_names_file_page_and_flag(tmp_path, monkeypatch):
    monkeypatch.setenv(D.ENV_VAR, str(tmp_path))
    with pytest.raises(D.DataError) as e:
        D.locate("auto-mpg", path=tmp_path / "nowhere")
    msg = str(e.value)
    assert "auto-mpg.csv" in msg and "archive.ics.uci.edu" in msg and "--data" in msg and D.ENV_VAR in msg


def _bundle_has(name):
    try:
        D.locate(name, verify=False)
        return True
    except D.DataError:
        return False


@pytest.mark.skipif(not _bundle_has("auto-mpg"), reason="offline bundle not present")
def test_env_var_and_corruption(tmp_path, monkeypatch):
    src = D.locate("auto-mpg")
    folder = tmp_path / "auto-mpg"
    folder.mkdir()
    shutil.copy(src / "auto-mpg.csv", folder / "auto-mpg.csv")
    monkeypatch.setenv(D.ENV_VAR, str(tmp_path))
    assert D.locate("auto-mpg") == folder
    # explicit path wins over the environment variable
    assert D.data_file("auto-mpg", "auto-mpg.csv", path=src / "auto-mpg.csv") == src / "auto-mpg.csv"
    with open(folder / "auto-mpg.csv", "ab") as fh:
        fh.write(b"1,2,3\n")
    with pytest.raises(D.DataError, match="corrupt"):
        D.locate("auto-mpg")


@pytest.mark.skipif(not _bundle_has("movielens-100k"), reason="offline bundle not present")
def test_bundle_checksums_and_rows():
    import pandas as pd

    for name in ("movielens-100k", "auto-mpg", "ucr-ecg200"):
        folder = D.locate(name, verify=True)
        for f in D.DATASETS[name].files:
            header = None if name != "auto-mpg" else 0
            sep = "," if f.name.endswith(".csv") else "\t"
            df = pd.read_csv(folder / f.name, sep=sep, header=header)
            assert len(df) == f.rows


def test_gzip_md5_is_of_uncompressed_content(tmp_path):
    p = tmp_path / "x.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b"hello\n")
    assert D.md5_uncompressed(p) == "b1946ac92492d2347c6235b4d2611184"


def test_dictzip_md5_is_of_uncompressed_content(tmp_path):
    p = tmp_path / "x.dict.dz"                 # dictzip writes a gzip stream (with an extra header field)
    with gzip.open(p, "wb") as fh:
        fh.write(b"hello\n")
    assert D.md5_uncompressed(p) == "b1946ac92492d2347c6235b4d2611184"


def test_a_system_package_folder_is_looked_in_last(tmp_path, monkeypatch):
    """GCIDE is found where Debian's dict-gcide installs it, after the bundle, unless a path or $ATTNLAB_DATA
    is given (then only there); missing, the error says which package installs it."""
    monkeypatch.delenv(D.ENV_VAR, raising=False)
    ds = D.DATASETS["gcide"]
    where = [(origin, str(folder)) for origin, folder in D._candidates(ds, None)]
    assert where[-1] == ("system package", "/usr/share/dictd") and where[0][0] == "offline bundle"
    monkeypatch.setenv(D.ENV_VAR, str(tmp_path))
    assert [o for o, _ in D._candidates(ds, None)] == [f"${D.ENV_VAR}"]
    with pytest.raises(D.DataError) as e:
        D.locate("gcide")
    msg = str(e.value)
    assert "gcide.dict.dz" in msg and "packages.debian.org" in msg and "/usr/share/dictd" in msg


@pytest.mark.skipif(not _bundle_has("ucr-ecg200"), reason="offline bundle not present")
def test_a_gz_file_may_be_given_uncompressed(tmp_path, capsys, monkeypatch):
    """The official pages ship u.data and FordA_TRAIN.tsv, not their .gz: the same md5 (of the uncompressed
    content) holds, so the plain files are found, verified and read, in a folder or given as the file itself;
    `attnlab data` shows the checksums and calls a damaged file CORRUPT, not MISSING."""
    from attnlab.cli import main

    src = D.locate("ucr-ecg200")
    folder = tmp_path / "ucr"
    folder.mkdir()
    for split in ("TRAIN", "TEST"):
        with gzip.open(src / f"ECG200_{split}.tsv.gz", "rb") as fh:
            (folder / f"ECG200_{split}.tsv").write_bytes(fh.read())
    assert D.locate("ucr-ecg200", folder) == folder
    assert D.data_file("ucr-ecg200", "ECG200_TRAIN.tsv.gz", folder) == folder / "ECG200_TRAIN.tsv"
    assert D.data_file("ucr-ecg200", "ECG200_TEST.tsv.gz", folder / "ECG200_TEST.tsv") == folder / "ECG200_TEST.tsv"
    assert len(D.read_table("ucr-ecg200", "ECG200_TRAIN.tsv.gz", folder, sep="\t", header=None)) == 100
    with pytest.raises(D.DataError, match="expected a file named ECG200_TRAIN.tsv.gz or ECG200_TRAIN.tsv"):
        D.data_file("ucr-ecg200", "ECG200_TRAIN.tsv.gz", folder / "ECG200_TEST.tsv")
    # attnlab data: the checksums; a damaged copy is CORRUPT
    bundle = tmp_path / "bundle"
    shutil.copytree(folder, bundle / "ucr")
    with open(bundle / "ucr" / "ECG200_TEST.tsv", "ab") as fh:
        fh.write(b"1\t2\n")
    monkeypatch.setenv(D.ENV_VAR, str(bundle))
    assert main(["data", "ucr-ecg200"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("ucr-ecg200") and "CORRUPT" in out and "MISSING" not in out
    monkeypatch.delenv(D.ENV_VAR)
    assert main(["data", "ucr-ecg200"]) == 0
    out = capsys.readouterr().out
    assert all(f"md5 {f.md5}" in out for f in D.DATASETS["ucr-ecg200"].files)


def test_paper_text_lookup_and_no_bundle_inside_an_installed_package(tmp_path, monkeypatch):
    """An installed package looked for the bundle (and the papers) in site-packages/../shared, and the paper text
    had no documented lookup at all (outside review)."""
    from attnlab.experiments import data as D

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "x.txt").write_text("App. L text")
    monkeypatch.setenv("ATTNLAB_PAPERS", str(tmp_path / "p"))
    assert D.paper_text("x.txt") == "App. L text" and D.paper_text("y.txt") is None
    monkeypatch.delenv("ATTNLAB_PAPERS")
    site = tmp_path / "site-packages"                       # no pyproject.toml: not a checkout
    site.mkdir()
    monkeypatch.setattr(D, "_PROJECT_ROOT", site)
    monkeypatch.chdir(tmp_path / "p")
    assert D._bundle_bases() == [tmp_path / "p"]
    (site / "pyproject.toml").write_text("")
    assert D._bundle_bases() == [site, tmp_path / "p"]

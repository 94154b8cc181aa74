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

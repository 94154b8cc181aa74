"""The data layer: find each real data set, verify its checksums, and read it.

Search order for data set NAME (a folder of files, laid out as in the offline bundle):
  1. an explicit path given by the caller (a runner's ``--data PATH``): the folder holding the
     files, or for one-file data sets the file itself;
  2. ``$ATTNLAB_DATA/<folder>`` (``ATTNLAB_DATA`` is a folder laid out like the bundle);
  3. the offline bundle ``../shared/data/<folder>``, seen from the project root when the package runs
     from a repository checkout, and from the current directory;
  4. for a data set that an operating-system package installs, the folder the package puts it in
     (``Dataset.system``; e.g. Debian's ``dict-gcide`` puts GCIDE in ``/usr/share/dictd``).

Every file is checked against the md5 of its uncompressed content (``.gz`` and dictzip's ``.dz`` are
gzip streams), so a ``.gz`` file may also be given uncompressed, as its official page ships it (``u.data``
for ``u.data.gz``, ``FordA_TRAIN.tsv`` for ``FordA_TRAIN.tsv.gz``): the same checksum holds for both.  A missing or corrupt file is a
:class:`DataError` naming the file, the official download page and how to point attnlab at it.
Nothing is read at import time.

The papers' texts (which a few claims read against their transcriptions) are found by
:func:`paper_text`: ``$ATTNLAB_PAPERS/<file>``, else the bundle's ``../shared/papers/<file>`` seen as above.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
from pathlib import Path

from attnlab.errors import UsageError

ENV_VAR = "ATTNLAB_DATA"
PAPERS_ENV_VAR = "ATTNLAB_PAPERS"
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _bundle_bases() -> list[Path]:
    """The folders whose ``../shared`` may hold the offline bundle: the project root when the package runs from
    a repository checkout (an installed package's root is site-packages: no bundle beside it), and the current
    directory."""
    bases = [_PROJECT_ROOT] if (_PROJECT_ROOT / "pyproject.toml").is_file() else []
    return list(dict.fromkeys(bases + [Path.cwd()]))


def paper_text(fname: str) -> str | None:
    """The text of the paper file `fname` (e.g. ``bidirectional_attention_mixture_of_word_experts.txt``):
    ``$ATTNLAB_PAPERS/<fname>`` when ATTNLAB_PAPERS is set (the only place then), else the bundle's
    ``../shared/papers/<fname>``; None when it is not there."""
    env = os.environ.get(PAPERS_ENV_VAR)
    places = ([Path(env).expanduser()] if env else
              [base.parent / "shared" / "papers" for base in _bundle_bases()])
    for folder in places:
        f = folder / fname
        if f.is_file():
            return f.read_text(encoding="utf-8")
    return None


class DataError(UsageError, FileNotFoundError):
    """A data file is missing, unreadable or does not match its checksum (the command line answers it
    with one line and exit code 2, like every bad input).  `kind`: 'missing' or 'corrupt' (unreadable,
    damaged, or another version: its checksum differs)."""

    def __init__(self, message: str, kind: str = "missing"):
        super().__init__(message)
        self.kind = kind


@dataclasses.dataclass(frozen=True)
class DataFile:
    name: str      # file name inside the data set's folder
    md5: str       # md5 of the uncompressed content
    rows: int      # data rows, header excluded


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str
    folder: str            # folder name inside the bundle / ATTNLAB_DATA
    files: tuple
    page: str              # official download page
    description: str
    substitute_for: str | None = None   # set when this set stands in for the paper's data
    system: tuple = ()                  # folders an operating-system package installs the files in

    def file(self, fname: str) -> DataFile:
        for f in self.files:
            if f.name == fname:
                return f
        raise ValueError(f"data set {self.name!r} has no file {fname!r}; files: "
                         + ", ".join(f.name for f in self.files))


_UCR = "https://www.cs.ucr.edu/~eamonn/time_series_data_2018/"


GCIDE_ENTRIES = 252_734     # its dictd entries (blank-line separated), experiments.bidir.analogies.gcide_documents


def _ucr(name, md5s, rows):
    return tuple(DataFile(f"{name}_{split}.tsv.gz", m, r) for split, m, r in zip(("TRAIN", "TEST"), md5s, rows))


DATASETS: dict[str, Dataset] = {d.name: d for d in [
    Dataset("movielens-100k", "movielens-100k",
            (DataFile("u.data.gz", "6e47046882bad158b0efbb84cd5cb987", 100000),),
            "https://grouplens.org/datasets/movielens/100k/",
            "MovieLens 100K ratings (user_id, item_id, rating, timestamp); gzip of ml-100k/u.data"),
    Dataset("instacart", "instacart",
            (DataFile("data_train_final.csv.gz", "8fe213a4fe98291edfcf3197c90e9d63", 275345),
             DataFile("data_test_final.csv.gz", "80893da5ef64aff6a21c4f920ba0a42a", 16066)),
            "https://www.kaggle.com/c/instacart-market-basket-analysis",
            "Instacart baskets as preprocessed by the EFA authors (63 products, >= 10 per order)"),
    Dataset("us-cities", "us-cities",
            (DataFile("all_cities.csv", "951305bad74d00b978a13409dcf7439f", 47),
             DataFile("all_cities_lat_lon.csv", "60869d9a6f6c7fff74bc651db5373ef7", 47)),
            "https://www.kaggle.com/datasets/sudalairajkumar/daily-temperature-of-major-cities",
            "the EFA temperature experiment's city list and coordinates (no temperatures)"),
    Dataset("auto-mpg", "auto-mpg",
            (DataFile("auto-mpg.csv", "a84bbe082e411f11506702f33932566b", 398),),
            "https://archive.ics.uci.edu/dataset/9/auto+mpg", "UCI Auto MPG (CSV)"),
    Dataset("ucr-forda", "ucr", _ucr("FordA", ("db406ac589d2e4cf8bce4da0874dd52e",
                                              "6076f15c16b4db5ec022abfe1d63b1bf"), (3601, 1320)),
            _UCR, "UCR FordA (length 500, 2 classes)"),
    Dataset("ucr-ecg200", "ucr", _ucr("ECG200", ("e3291dc12d2dfab1eadf12ba34dfb1e5",
                                                "f17a1b7d459b04ac68affdf8092ee785"), (100, 100)),
            _UCR, "UCR ECG200 (length 96, 2 classes)"),
    Dataset("ucr-ecg5000", "ucr", _ucr("ECG5000", ("f5e8fbb47167d3e8d28ea0182171bc99",
                                                  "e01aec3f88b72ba73a4a60cb4e9dcfcf"), (500, 4500)),
            _UCR, "UCR ECG5000 (length 140, 5 classes)"),
    Dataset("ucr-gestures", "ucr",
            _ucr("AllGestureWiimoteX", ("7681119dc502fc98a226cf585152685f", "735e2c87d1cb9a08f519c95d1704e5f3"), (300, 700))
            + _ucr("AllGestureWiimoteY", ("66e59061bedd09853dc088b39f400e7c", "e28592ad09751ebed05f1975e1ac4c72"), (300, 700))
            + _ucr("AllGestureWiimoteZ", ("11d322b5b171b0c02dcbd93159450ac1", "b7533c4373974dc502155ec651970e77"), (300, 700)),
            _UCR, "UCR AllGestureWiimote X/Y/Z (variable length <= 500, NaN-padded, 10 classes)",
            substitute_for="uWaveGestureLibrary (UCR), used by the kernel paper's Table 3"),
    Dataset("colorado-monthly-met", "colorado-monthly-met",
            (DataFile("stations.csv", "e51a1ba8a29eb901cf74df93afdb3039", 376),
             DataFile("temperatures.csv.gz", "ca8d4c25d2767e2851706c5581f086d2", 178842)),
            "https://www.image.ucar.edu/Data/US.monthly.met/CO.shtml",
            "monthly min/max temperatures at 376 Colorado stations, 1895-1997",
            substitute_for="Kaggle 'Daily Temperature of Major Cities' (city_temperature.csv), EFA Sec 5.4"),
    Dataset("movie-review-sentences", "movie-review-sentences",
            (DataFile("sentences.tsv.gz", "704331b0de9f33845fb9d288c74932ac", 10605),),
            "https://github.com/cjhutto/vaderSentiment",
            "10,605 Rotten Tomatoes review sentences with mean human sentiment (VADER gold standard)",
            substitute_for="IMDB movie-review sentiment (kernel paper, Table 4)"),
    Dataset("gcide", "gcide",
            (DataFile("gcide.dict.dz", "e578590505e424551371d51de50965e6", GCIDE_ENTRIES),),
            "https://packages.debian.org/bookworm/dict-gcide",
            "GCIDE 0.48.5, the GNU Collaborative International Dictionary of English (Webster's 1913 and WordNet "
            "glosses), in dictd's format as Debian's dict-gcide 0.48.5+nmu2 installs it (apt-get install "
            "dict-gcide); an English corpus of 3.8M tokens",
            substitute_for="the corpora BERT and word2vec were trained on (bidir paper, Table 3)",
            system=("/usr/share/dictd",)),
]}


def _candidates(ds: Dataset, path: str | os.PathLike | None) -> list[tuple[str, Path]]:
    """Where to look, in order.  An explicit path, else $ATTNLAB_DATA when set, is the only place
    looked at: a file missing there is an error, never a silent fall-back to another copy."""
    if path is not None:
        if not str(path).strip():               # ('' read as the current folder: "not found in .")
            raise UsageError("--data is empty; give the folder (or file) of your copy, or leave --data out")
        p = Path(path).expanduser()
        return [("explicit path", p.parent if p.is_file() else p)]
    env = os.environ.get(ENV_VAR)
    if env:
        return [(f"${ENV_VAR}", Path(env).expanduser() / ds.folder)]
    return ([("offline bundle", base.parent / "shared" / "data" / ds.folder) for base in _bundle_bases()]
            + [("system package", Path(folder)) for folder in ds.system])


_VERIFIED: dict[tuple, bool] = {}


def _names(fname: str) -> tuple[str, ...]:
    """The names a file of a data set may have: as listed, and for a .gz one its uncompressed twin."""
    return (fname, fname[:-3]) if fname.endswith(".gz") else (fname,)


def _on_disk(folder: Path, fname: str) -> Path | None:
    """The file `fname` of a data set in `folder` (or its uncompressed twin, _names), or None."""
    return next((folder / n for n in _names(fname) if (folder / n).is_file()), None)


def md5_uncompressed(path: Path) -> str:
    """md5 of the file's content (of the decompressed content for .gz); a truncated or damaged gzip
    stream is a DataError naming the file."""
    import zlib

    opener = gzip.open if path.suffix in (".gz", ".dz") else open
    h = hashlib.md5()
    try:
        with opener(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(f"{path} is corrupt: cannot decompress it ({type(exc).__name__}: {exc})", "corrupt") from None
    except OSError as exc:
        raise DataError(f"{path} cannot be read: {exc.strerror or exc}", "corrupt") from None
    return h.hexdigest()


def _how_to(ds: Dataset, fname: str) -> str:
    if ds.system:
        return (f"install the package of {ds.page} (it puts the file in {', '.join(ds.system)}, where it is found), "
                f"or pass the file's path to the runner (--data PATH), or set {ENV_VAR}=FOLDER with the file at "
                f"FOLDER/{ds.folder}/{fname}")
    return (f"download it from {ds.page}, then either pass its path to the runner (--data PATH), "
            f"or set {ENV_VAR}=FOLDER with the file at FOLDER/{ds.folder}/{fname}")


def locate(name: str, path: str | os.PathLike | None = None, verify: bool = True) -> Path:
    """The folder holding all files of data set `name`, checksums verified."""
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join(DATASETS)}")
    ds = DATASETS[name]
    tried = []
    for origin, folder in _candidates(ds, path):
        missing = [f.name for f in ds.files if _on_disk(folder, f.name) is None]
        if not missing:
            if verify:
                for f in ds.files:
                    verify_file(ds, _on_disk(folder, f.name), f.name)
            return folder
        tried.append((origin, folder, missing))
    # name the files that are really missing, in the first place that holds any of the set's files
    origin, folder, missing = next((t for t in tried if len(t[2]) < len(ds.files)), tried[0])
    where = (f"in {folder} ({origin})" if len(tried) == 1 else
             "; ".join(f"in {f} ({o})" for o, f, _ in tried))
    raise DataError(f"data set {name!r}: {', '.join(' or '.join(_names(m)) for m in missing)} not found {where}; "
                    + _how_to(ds, missing[0]))


def verify_file(ds: Dataset, p: Path, fname: str | None = None) -> None:
    """Check the file at `p` against the md5 of file `fname` of the data set (default: p's own name)."""
    f = ds.file(fname or p.name)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key):
        return
    got = md5_uncompressed(p)
    if got != f.md5:
        raise DataError(f"data set {ds.name!r}: {p} is corrupt or a different version "
                        f"(md5 of uncompressed content {got}, expected {f.md5}); " + _how_to(ds, f.name), "corrupt")
    _VERIFIED[key] = True


def data_file(name: str, fname: str, path: str | os.PathLike | None = None, verify: bool = True) -> Path:
    """Path of one file of data set `name` (checksum verified): `fname`, or its uncompressed twin (_names)."""
    ds = DATASETS.get(name)
    if ds is None:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join(DATASETS)}")
    ds.file(fname)
    if path is not None and Path(path).is_file():
        p = Path(path)
        if p.name not in _names(fname):
            raise DataError(f"data set {name!r}: expected a file named {' or '.join(_names(fname))}, got {p}")
        if verify:
            verify_file(ds, p, fname)
        return p
    return _on_disk(locate(name, path, verify), fname)


def read_table(name: str, fname: str, path: str | os.PathLike | None = None, **read_kw):
    """Read one file of data set `name` with pandas (`read_kw` go to pandas.read_csv)."""
    import pandas as pd

    return pd.read_csv(data_file(name, fname, path), **read_kw)

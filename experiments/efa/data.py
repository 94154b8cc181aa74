"""Data for the EFA experiments (Sec 6, App. H): the App. H.1 synthetic generator, the MovieLens
100K preprocessing of Sec 6.2 / App. H.2, the Instacart baskets of Sec 6.3 / App. H.3, the city
temperatures of Sec 6.4 / App. H.4 and their offline substitute, plus user/basket-level splits.

Every loader asserts the counts the paper prints when it reads the paper's data.  Nothing is read
at import time.  Sequences are stored padded with 0 on the right; item ids are 1..D.
"""
from __future__ import annotations

import dataclasses

import numpy as np

# --------------------------------------------------------------------------- containers


@dataclasses.dataclass
class Sequences:
    """Padded sequences: items (F, L) int64 in 0..D (0 = padding), values (F, L) float64 or None,
    lengths (F,), and the id of each sequence (user id / order id)."""
    items: np.ndarray
    lengths: np.ndarray
    values: np.ndarray | None = None
    ids: np.ndarray | None = None
    n_items: int = 0

    def subset(self, idx) -> "Sequences":
        idx = np.asarray(idx)
        return Sequences(self.items[idx], self.lengths[idx],
                         None if self.values is None else self.values[idx],
                         None if self.ids is None else self.ids[idx], self.n_items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def n_targets(self) -> int:
        return int(self.lengths.sum())


def pad_sequences(seqs: list, values: list | None = None, ids=None, n_items: int = 0) -> Sequences:
    if len(seqs) == 0:
        raise ValueError("seqs must hold at least one sequence")
    L = max(len(s) for s in seqs)
    items = np.zeros((len(seqs), L), dtype=np.int64)
    vals = None if values is None else np.zeros((len(seqs), L), dtype=np.float64)
    for f, s in enumerate(seqs):
        items[f, :len(s)] = s
        if vals is not None:
            vals[f, :len(s)] = values[f]
    return Sequences(items, np.array([len(s) for s in seqs], dtype=np.int64), vals,
                     None if ids is None else np.asarray(ids), n_items)


# --------------------------------------------------------------------------- splits


def split_three(n: int, fractions=(0.5625, 0.1875, 0.25), seed: int = 42):
    """A random partition of range(n) into train/val/test index arrays of the given fractions.

    Used for the MovieLens user-level split (56.25 / 18.75 / 25 %: 25 % test, then 25 % of the rest
    for validation).  Every index lands in exactly one part: unlike the authors' code, which
    matches shuffled *positions* 0..n-1 against raw user ids 1..943 and so silently drops users
    (App. H.2 as run), no user is lost."""
    if n < 3:
        raise ValueError(f"n must be >= 3 to split into three parts; got {n}")
    fr = np.asarray(fractions, dtype=float)
    if fr.shape != (3,) or np.any(fr <= 0) or abs(fr.sum() - 1) > 1e-9:
        raise ValueError(f"fractions must be 3 positive numbers summing to 1; got {fractions}")
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(fr[2] * n))
    n_val = int(round(fr[1] * n))
    test, val, train = perm[:n_test], perm[n_test:n_test + n_val], perm[n_test + n_val:]
    return np.sort(train), np.sort(val), np.sort(test)


def split_two(n: int, val_fraction: float = 0.25, seed: int = 42):
    """Random train/validation partition of range(n) (Instacart: 25 % of training baskets)."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1); got {val_fraction}")
    perm = np.random.default_rng(seed).permutation(n)
    n_val = int(round(val_fraction * n))
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


# --------------------------------------------------------------------------- synthetic (App. H.1)


def synthetic_ratings(n_users: int, rng: np.random.Generator, sigma: float = 1.0):
    """The exact generating process of App. H.1.

    Five movies (ids 1..5), each user rates all five in a uniformly random order.  Rating means:
    3 by default; movie 2: 1 if rated after movie 1 (anywhere before), else 5; movie 4: 1 if rated
    directly after movie 3; movie 3: 1 if rated directly after movie 4; movie 5: 5 if rated last.
    Returns (orders (n,5) int64 in 1..5, ratings (n,5) float64, means (n,5) float64)."""
    if n_users < 1:
        raise ValueError(f"n_users must be >= 1; got {n_users}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0; got {sigma}")
    orders = np.stack([rng.permutation(5) + 1 for _ in range(n_users)]).astype(np.int64)
    means = synthetic_means(orders)
    ratings = means + sigma * rng.standard_normal(means.shape)
    return orders, ratings, means


def synthetic_means(orders: np.ndarray) -> np.ndarray:
    """Conditional means of App. H.1 for each (user, position) given the viewing order."""
    orders = np.asarray(orders)
    n, I = orders.shape
    pos = np.argsort(orders, axis=1)             # pos[u, m-1] = position of movie m
    mu = np.full((n, I), 3.0)
    rows = np.arange(n)
    p1, p2, p3, p4, p5 = (pos[:, m] for m in range(5))
    mu[rows, p2] = np.where(p1 < p2, 1.0, 5.0)
    mu[rows, p4] = np.where(p4 == p3 + 1, 1.0, 3.0)
    mu[rows, p3] = np.where(p3 == p4 + 1, 1.0, 3.0)
    mu[rows, p5] = np.where(p5 == I - 1, 5.0, 3.0)
    return mu


def synthetic_dataset(n_users: int, rng: np.random.Generator, n_train: int | None = None):
    """Users 1..n_train are train, the rest test (the code: 7,500 / 2,500 of 10,000)."""
    orders, ratings, means = synthetic_ratings(n_users, rng)
    n_train = int(0.75 * n_users) if n_train is None else n_train
    seqs = Sequences(orders, np.full(n_users, 5, dtype=np.int64), ratings, np.arange(1, n_users + 1), 5)
    return seqs.subset(np.arange(n_train)), seqs.subset(np.arange(n_train, n_users)), means


# --------------------------------------------------------------------------- MovieLens (Sec 6.2)

MOVIELENS_COUNTS = {
    # experiment: (users, movies, sparsity %, ratings)   ratings [ours]; App. H.2
    "sequences": (902, 50, 69.50, 13757),
    "ratings": (893, 50, 72.08, 12465),
}


def top_movies(df, n: int = 50) -> list:
    """The n movies with the most distinct users.  Ties are broken by the smaller movie id.

    At n=50 there is a tie at the boundary (ranks 50/51 at 276 users in experiment 1: movies 28 and
    191; at 251 users in experiment 2: movies 276 and 357).  Breaking it by the smaller id reproduces
    the paper's counts (902 users / 69.50 % and 893 users / 72.08 %); the other choice gives 901
    and 892 users."""
    cnt = df.groupby("item_id")["user_id"].nunique()
    order = sorted(cnt.index.tolist(), key=lambda i: (-int(cnt[i]), int(i)))
    return order[:n]


def movielens_frame(path=None):
    from attnlab.experiments.data import read_table

    return read_table("movielens-100k", "u.data.gz", path, sep="\t", header=None,
                      names=["user_id", "item_id", "rating", "timestamp"])


def movielens_preprocess(df, experiment: str = "sequences", seed: int = 42, check: bool = True):
    """The paper's preprocessing (App. H.2), in the authors' order of steps.

    experiment 'sequences' (Sec 6.2.1): top 50 movies by distinct users; drop users whose number of
    reviews is >= 2x their number of distinct timestamps; per (user, timestamp) keep one movie at
    random (seeded).  'ratings' (Sec 6.2.2): first keep ratings 3,4,5 mapped to 1,2,3, then the same,
    with users holding a single rating dropped before the de-duplication (as in the code).
    Returns (Sequences sorted by user with items 1..50 in time order, values = ratings for
    'ratings', info dict).  With check=True asserts the paper's user count, movie count and
    sparsity."""
    if experiment not in MOVIELENS_COUNTS:
        raise ValueError(f"experiment must be one of {', '.join(MOVIELENS_COUNTS)}; got {experiment!r}")
    df = df.copy()
    if experiment == "ratings":
        df["rating"] = df["rating"] - 2
        df = df[df["rating"] > 0]
    top = top_movies(df, 50)
    df = df[df["item_id"].isin(top)]
    g = df.groupby("user_id").agg(n=("item_id", "size"), nt=("timestamp", "nunique"))
    df = df[df["user_id"].isin(g.index[g["n"] < 2 * g["nt"]])]
    if experiment == "ratings":
        c = df.groupby("user_id").size()
        df = df[df["user_id"].isin(c.index[c > 1])]
    # one movie per (user, timestamp), chosen at random with a seeded generator
    rng = np.random.default_rng(seed)
    df = df.assign(_r=rng.random(len(df))).sort_values(["user_id", "timestamp", "_r"])
    df = df.drop_duplicates(["user_id", "timestamp"], keep="first")
    df = df.sort_values(["user_id", "timestamp"], kind="stable")
    movie_index = {m: k + 1 for k, m in enumerate(sorted(top))}
    seqs, vals, users = [], [], []
    for u, grp in df.groupby("user_id", sort=True):
        seqs.append([movie_index[m] for m in grp["item_id"]])
        vals.append(grp["rating"].to_numpy(dtype=float))
        users.append(u)
    out = pad_sequences(seqs, vals if experiment == "ratings" else None, users, 50)
    n_users, n_movies, n_ratings = len(users), int(df["item_id"].nunique()), len(df)
    sparsity = 100.0 * (1 - n_ratings / (n_users * 50))
    info = {"users": n_users, "movies": n_movies, "ratings": n_ratings,
            "sparsity_percent": round(sparsity, 2), "max_length": int(out.lengths.max()),
            "tie_break": "smaller movie id wins at rank 50", "movie_ids": sorted(top)}
    if check:
        eu, em, es, er = MOVIELENS_COUNTS[experiment]
        assert (n_users, n_movies) == (eu, em), f"MovieLens {experiment}: got {n_users} users / {n_movies} movies, paper {eu}/{em}"
        assert abs(sparsity - es) < 0.005, f"MovieLens {experiment}: sparsity {sparsity:.3f} %, paper {es} %"
        assert n_ratings == er, f"MovieLens {experiment}: {n_ratings} ratings, expected {er}"
    return out, info


# --------------------------------------------------------------------------- Instacart (Sec 6.3)

INSTACART_COUNTS = {"train_baskets": 24781, "test_baskets": 1433, "train_rows": 275345,
                    "test_rows": 16066, "items": 63}

# Item ids 1..63 of the processed files, in order (from the authors' notebook outputs; docs/instances.md).
INSTACART_ITEMS = [
    "Organic Baby Spinach", "Organic Cucumber", "Organic Ginger Root", "Bag of Organic Bananas",
    "Organic Baby Arugula", "Organic Red Onion", "Organic Yellow Onion", "Organic Lemon",
    "Organic Garnet Sweet Potato (Yam)", "Unsweetened Almondmilk", "Organic Cilantro",
    "Organic Hass Avocado", "Limes", "Red Vine Tomato", "Organic Raspberries", "Organic Gala Apples",
    "Sparkling Water Grapefruit", "Strawberries", "Organic Blueberries", "100% Whole Wheat Bread",
    "Organic Red Bell Pepper", "Organic Half & Half", "Organic Strawberries", "Organic Fuji Apple",
    "Green Bell Pepper", "Asparagus", "Large Lemon", "Organic Small Bunch Celery",
    "Organic Italian Parsley Bunch", "Michigan Organic Kale", "Banana", "Organic Tomato Cluster",
    "Original Hummus", "Blueberries", "Organic Garlic", "Organic Zucchini", "Organic Baby Carrots",
    "Cucumber Kirby", "Organic Avocado", "Organic Granny Smith Apple",
    "Organic Large Extra Fancy Fuji Apple", "Organic Grape Tomatoes", "Small Hass Avocado",
    "Organic Peeled Whole Baby Carrots", "Organic Kiwi", "Organic D'Anjou Pears", "Hass Avocados",
    "Carrots", "Yellow Onions", "Organic Whole String Cheese", "Organic Whole Milk",
    "Fresh Cauliflower", "Organic Blackberries", "Apple Honeycrisp Organic", "Seedless Red Grapes",
    "Boneless Skinless Chicken Breasts", "Extra Virgin Olive Oil", "Organic Unsweetened Almond Milk",
    "Honeycrisp Apple", "Red Peppers", "Spring Water", "Half & Half", "Raspberries",
]
assert len(INSTACART_ITEMS) == 63


def instacart_load(path=None, check: bool = True):
    """Train (24,781 baskets from the prior orders) and test (1,433 baskets) of the authors'
    processed files; items 1..63 in basket order (dense rank of add_to_cart_order)."""
    from attnlab.experiments.data import read_table

    out = []
    for fname in ("data_train_final.csv.gz", "data_test_final.csv.gz"):
        df = read_table("instacart", fname, path).sort_values(["order_id", "rank"], kind="stable")
        # vectorised padding: row f = order f (sorted by id), column = position in the basket
        ids, f = np.unique(df["order_id"].to_numpy(), return_inverse=True)
        lengths = np.bincount(f)
        pos = np.arange(len(df)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        items = np.zeros((len(ids), int(lengths.max())), dtype=np.int64)
        items[f, pos] = df["product_id"].to_numpy(dtype=np.int64)
        out.append((Sequences(items, lengths.astype(np.int64), None, ids, 63), len(df)))
    (train, n_tr), (test, n_te) = out
    if check:
        c = INSTACART_COUNTS
        assert len(train) == c["train_baskets"] and len(test) == c["test_baskets"], \
            f"Instacart: {len(train)}/{len(test)} baskets, paper {c['train_baskets']}/{c['test_baskets']}"
        assert (n_tr, n_te) == (c["train_rows"], c["test_rows"]), f"Instacart rows {n_tr}/{n_te}"
        n_items = len(np.unique(np.concatenate([train.items[train.items > 0], test.items[test.items > 0]])))
        assert n_items == c["items"], f"Instacart: {n_items} items, paper 63"
        assert train.lengths.min() >= 10 and test.lengths.min() >= 10, "Instacart baskets must hold >= 10 items"
    return train, test


# --------------------------------------------------------------------------- temperatures (Sec 6.4)


def haversine_km(lat1, lon1, lat2, lon2):
    """Great-circle distance (km) between points given in degrees (broadcasting)."""
    lat1, lon1, lat2, lon2 = (np.radians(np.asarray(a, dtype=float)) for a in (lat1, lon1, lat2, lon2))
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0088 * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


@dataclasses.dataclass
class Grid:
    """A complete (sample x site) table of temperatures: temps (T, I), coords (I, 2) as (lat, lon),
    per-sample lags (T, n_lags, I) (lagged temperatures; NaN-free), split labels per sample."""
    temps: np.ndarray
    coords: np.ndarray
    lags: np.ndarray
    split: np.ndarray          # (T,) in {'train', 'val', 'test'}
    sites: list
    sample_labels: list
    description: str
    substitute: str | None = None


KAGGLE_CITIES = 44                     # the paper's count (App. H.4)
KAGGLE_EXCLUDED_STATES = ("Alaska", "Hawaii", "Additional Territories", "District of Columbia",
                          "Arizona", "Connecticut", "South Dakota")


def kaggle_city_grid(csv_path, coords_path=None, n_lags: int = 2) -> Grid:
    """The paper's exact setup (App. H.4) from the Kaggle file city_temperature.csv:
    October daily means (°F) of one city per contiguous state, 2007–2019; 44 cities after dropping
    AK, HI, DC, territories and AZ, CT, SD (missing values); Delaware has no city.  Train 2007–2012,
    validation 2013–2016, test 2017–2019; one sample per day.  Lags are the previous days (Oct 1's
    lag is Sep 30).  A (date, city) listed more than once is averaged, with a warning where the rows differ."""
    import pandas as pd
    from attnlab.experiments.data import DataError, read_table

    try:
        df = pd.read_csv(csv_path, low_memory=False)
    except (ValueError, UnicodeDecodeError, OSError) as exc:     # pandas' ParserError and EmptyDataError too
        raise DataError(f"--data {csv_path}: not a CSV file pandas can read "
                        f"({str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__})") from None
    need = ("Country", "State", "City", "Year", "Month", "Day", "AvgTemperature")
    missing = [c for c in need if c not in df.columns]
    if missing:                     # another CSV (or a text file) read as one: the Kaggle file's columns
        raise DataError(f"--data {csv_path}: lacks the column(s) {', '.join(missing)} of the Kaggle "
                        "city_temperature.csv (Region, Country, State, City, Month, Day, Year, AvgTemperature)")
    for col in ("Year", "Month", "Day", "AvgTemperature"):      # text there was a TypeError traceback
        num = pd.to_numeric(df[col], errors="coerce")
        # (pandas reads "inf" as a number: it trained to a NaN loss, blamed on the learning rate)
        bad = (num.isna() & df[col].notna()) | (num.notna() & ~np.isfinite(num.to_numpy(dtype=float, na_value=0.0)))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"--data {csv_path}: column {col} holds {df[col].iloc[row]!r} (data row {row + 1}), "
                            "not a finite number")
        df[col] = num
    cities = read_table("us-cities", "all_cities_lat_lon.csv", coords_path)
    cities.columns = [c.strip() for c in cities.columns]
    df = df[(df["Country"] == "US") & (df["Year"] >= 2007) & (df["Year"] <= 2019)]
    df = df[~df["State"].isin(KAGGLE_EXCLUDED_STATES)]
    cities = cities[~cities["State"].isin(KAGGLE_EXCLUDED_STATES)]
    df = df.merge(cities, on=["State", "City"], how="inner")
    # a site is a (city, state): Charleston, South Carolina and Charleston, West Virginia are two of the 44 (keyed by
    # the city alone they were averaged into one column, 43 sites beside 44 coordinates)
    df["site"] = df["City"] + ", " + df["State"]
    cities = cities.assign(site=cities["City"] + ", " + cities["State"])
    df = df[df["AvgTemperature"] > -99]
    df["date"] = pd.to_datetime(dict(year=df["Year"], month=df["Month"], day=df["Day"]), errors="coerce")
    df = df.dropna(subset=["date"])
    # a (date, city) listed more than once is averaged; where the rows differ, say so (a silent mean hid them)
    spread = df.groupby(["date", "site"])["AvgTemperature"].agg(["min", "max"])
    differ = int((spread["max"] > spread["min"]).sum())
    if differ:
        import sys

        print(f"attnlab: warning: --data {csv_path}: {differ} (date, site) pair(s) have rows with different "
              "AvgTemperature; their mean is used", file=sys.stderr)
    wide = df.pivot_table(index="date", columns="site", values="AvgTemperature", aggfunc="mean")
    sites = sorted(set(wide.columns) & set(cities["site"]))
    wide = wide[sites]
    oct_days = wide.index[(wide.index.month == 10)]
    temps, lags, labels, split = [], [], [], []
    for d in oct_days:
        prev = [d - pd.Timedelta(days=k) for k in range(1, n_lags + 1)]
        if wide.loc[d].isna().any() or any(p not in wide.index or wide.loc[p].isna().any() for p in prev):
            continue
        temps.append(wide.loc[d].to_numpy(float))
        lags.append(np.stack([wide.loc[p].to_numpy(float) for p in prev]) if n_lags else np.zeros((0, len(sites))))
        labels.append(str(d.date()))
        y = d.year
        split.append("train" if y <= 2012 else ("val" if y <= 2016 else "test"))
    if not temps or len({*split}) < 3:
        raise DataError(f"--data {csv_path}: no complete October days of US cities in 2007-2019 for each of the "
                        "train, validation and test years (is it the Kaggle city_temperature.csv?)")
    if len(sites) != KAGGLE_CITIES:
        # the records say the paper's setting, "44 cities, October": a file giving other cities is other data (a
        # copy with 2 cities was recorded under it, on the paper's data)
        raise DataError(f"--data {csv_path}: gives {len(sites)} cities with complete Octobers, not the paper's "
                        f"{KAGGLE_CITIES} (one per contiguous state, App. H.4): is it the complete Kaggle "
                        "city_temperature.csv?")
    c = cities.set_index("site").loc[sites]
    coords = c[["Latitude", "Longitude"]].to_numpy(float)
    return Grid(np.array(temps), coords, np.array(lags), np.array(split), sites, labels,
                f"Kaggle city_temperature.csv: October 2007-2019, {len(sites)} cities (°F)")


COLORADO_SUBSTITUTE = ("SUBSTITUTE data (colorado-monthly-met) for Kaggle city_temperature.csv: monthly mean "
                       "temperature (°C, (tmin+tmax)/2) at 44 Colorado stations, 1961-1990; samples are "
                       "(year, month); lags are the previous months")


def colorado_grid(path=None, n_sites: int = 44, years=(1961, 1990), n_lags: int = 2) -> Grid:
    """The offline substitute for the city temperatures (labelled as such everywhere).

    Monthly mean temperature (tmin+tmax)/2 in °C at the `n_sites` Colorado stations with the most
    complete record over `years`; one sample per (year, month) at which all these stations report,
    and whose `n_lags` previous months are complete too.  Split by year in the paper's 6/4/3
    proportions: the first 6/13 of the years train, the next 4/13 validation, the last 3/13 test."""
    from attnlab.experiments.data import read_table

    st = read_table("colorado-monthly-met", "stations.csv", path, dtype={"station": str})
    t = read_table("colorado-monthly-met", "temperatures.csv.gz", path, dtype={"station": str})
    t = t[(t["year"] >= years[0] - 1) & (t["year"] <= years[1])].dropna(subset=["tmin", "tmax"])
    t = t.assign(temp=(t["tmin"] + t["tmax"]) / 2, idx=(t["year"] - years[0]) * 12 + t["month"] - 1)
    wide = t.pivot_table(index="idx", columns="station", values="temp")
    in_range = wide.loc[wide.index >= 0]
    cover = in_range.notna().sum().sort_values(ascending=False, kind="stable")
    sites = sorted(cover.index[:n_sites].tolist())
    wide = wide[sites]
    temps, lags, labels, split = [], [], [], []
    n_years = years[1] - years[0] + 1
    y_train = years[0] + round(n_years * 6 / 13) - 1
    y_val = years[0] + round(n_years * 10 / 13) - 1
    for idx in in_range.index:
        prev = [idx - k for k in range(1, n_lags + 1)]
        if wide.loc[idx].isna().any() or any(p not in wide.index or wide.loc[p].isna().any() for p in prev):
            continue
        temps.append(wide.loc[idx].to_numpy(float))
        lags.append(np.stack([wide.loc[p].to_numpy(float) for p in prev]) if n_lags else np.zeros((0, n_sites)))
        y, m = years[0] + idx // 12, idx % 12 + 1
        labels.append(f"{y}-{m:02d}")
        split.append("train" if y <= y_train else ("val" if y <= y_val else "test"))
    s = st.set_index("station").loc[sites]
    coords = s[["lat", "lon"]].to_numpy(float)
    return Grid(np.array(temps), coords, np.array(lags), np.array(split), sites, labels,
                COLORADO_SUBSTITUTE, substitute=COLORADO_SUBSTITUTE)


def nearest_neighbours(coords: np.ndarray, k: int) -> np.ndarray:
    """(I, k) indices of the k nearest *other* sites by Haversine distance (ties by index)."""
    I = len(coords)
    if not 1 <= k <= I - 1:
        raise ValueError(f"k must be in 1..{I - 1}; got {k}")
    d = haversine_km(coords[:, None, 0], coords[:, None, 1], coords[None, :, 0], coords[None, :, 1])
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, :k]

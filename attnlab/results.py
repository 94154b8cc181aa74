"""`attnlab results <paper>`: our mean ± 95% CI over seeds beside the paper's number.

Records come from :mod:`attnlab.experiment` (``results/<experiment>/<config>/*.json``); the papers'
numbers from ``experiments/paper_numbers/<paper>.py``, a dict ``PAPER_NUMBERS`` keyed by
``(experiment, setting, model, metric)``.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import stat
from collections import Counter, defaultdict
from pathlib import Path

ROW_KEYS = ("experiment", "setting", "model", "metric", "paper", "ours_mean", "ours_ci95",
            "n_seeds", "device", "config", "converged")


def record_converged(rec: dict) -> bool:
    """A record is usable: its training converged by the rule of :mod:`attnlab.convergence` (judged from
    its stored curves: `converged` is True), or it is not a training run (its `convergence.status` is
    "not-trained": a pretrained model evaluated, a timing).  `converged: null` (unknown: not enough
    curve stored, trivial value unknown) and a record without the key count as not converged."""
    if rec.get("converged") is True:
        return True
    return ((rec.get("convergence") or {}).get("status") == "not-trained")


def row_converged(rec: dict, row: dict) -> bool:
    """Whether one metric row of a record comes from a converged run: the row's own `converged` where
    the record trains several models and says it per model (True; or null for a row whose entry in the
    record's `convergence.models`, by "<setting> <model>" or by model, is "not-trained"), else the record's (:func:`record_converged`)."""
    if "converged" in row:
        if row["converged"] is True:
            return True
        per = (rec.get("convergence") or {}).get("models") or {}
        entry = per.get(f"{row.get('setting')} {row.get('model')}") or per.get(str(row.get("model"))) or {}
        return row["converged"] is None and entry.get("status") == "not-trained"
    return record_converged(rec)


def row_unknown(rec: dict, row: dict) -> bool:
    """Whether a metric row that is not usable (:func:`row_converged` False) is so because its run's
    convergence could not be judged (`converged: null` or missing: too little curve stored), rather than
    because the rule found it did not converge."""
    if row_converged(rec, row):
        return False
    return (row["converged"] if "converged" in row else rec.get("converged")) is None


def convergence_note(row: dict, left_out: str = ", left out") -> str:
    """What a reader must know about a row's convergence: "not converged" where none of its runs
    converged and they are shown, "convergence unknown" where none could be judged, or how many runs
    were left out and why (`left_out` ends that phrase); "" where every run converged."""
    bad, unknown = row.get("n_not_converged") or 0, row.get("n_unknown") or 0
    if row.get("converged") is False:
        if not unknown:
            return "not converged"
        return "convergence unknown" if unknown == bad else \
            f"not converged ({bad - unknown} run(s)) or unknown ({unknown})"
    if bad:
        parts = [f"{bad - unknown} run(s) not converged"] if bad > unknown else []
        parts += [f"{unknown} run(s) of unknown convergence"] if unknown else []
        return " and ".join(parts) + left_out
    return ""


def ci95(values: list[float]) -> float | None:
    """Half-width of the 95% Student-t confidence interval of the mean (None for one value)."""
    if len(values) < 2:
        return None
    from attnlab.evidence import t_interval

    return float(t_interval(values)["half"])


def _record_problem(rec) -> str | None:
    """Why a parsed record cannot be used (None when it can)."""
    if not isinstance(rec, dict):
        return f"holds a JSON {type(rec).__name__}, not an object"
    for k in ("experiment", "config", "metrics"):
        if k not in rec:
            return f"lacks the key {k!r}"
    if not isinstance(rec["metrics"], list):
        return "its 'metrics' is not a list"
    for i, m in enumerate(rec["metrics"]):
        if not isinstance(m, dict) or not all(k in m for k in ("setting", "model", "metric", "value")):
            return f"metrics[{i}] lacks setting/model/metric/value"
        v = m["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"metrics[{i}].value is not a number ({json.dumps(v)[:30]})"
        if not math.isfinite(float(v)):
            return f"metrics[{i}].value is not finite ({v!r})"
        if abs(float(v)) > MAX_METRIC:
            return (f"metrics[{i}].value {float(v):.3g} is beyond {MAX_METRIC:g} (no mean or CI over seeds "
                    "can be formed in float64)")
        for k in ("setting", "model", "metric"):
            if not isinstance(m[k], str):
                return f"metrics[{i}].{k} is not a string ({json.dumps(m[k])[:30]})"
        if m.get("converged") is not None and not isinstance(m["converged"], bool):
            return f"metrics[{i}].converged is not true, false or null ({json.dumps(m['converged'])[:30]})"
    if "seed" not in rec:                      # every runner writes one; a seed-less copy would count twice
        return "lacks the key 'seed'"
    if isinstance(rec["seed"], bool) or not isinstance(rec["seed"], int):
        return f"its 'seed' is not an integer ({json.dumps(rec['seed'])[:30]})"
    w = rec.get("wall_seconds")
    if w is not None and (isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= MAX_METRIC):
        return f"its 'wall_seconds' is not a number of seconds ({json.dumps(w)[:30]})"
    for k in ("experiment", "config"):
        if not isinstance(rec[k], str):
            return f"its {k!r} is not a string ({json.dumps(rec[k])[:30]})"
    if not 0 <= rec["seed"] <= 2 ** 32 - 1:
        return f"its 'seed' {rec['seed']} is outside 0..2**32-1"
    # the other fields the tables, the report and the figures read: of the type the runners write, or absent
    kinds = {"tag": str, "device": str, "device_name": str, "substitute": str, "converged": bool,
             "training": dict, "convergence": dict, "extra": dict, "config_values": dict, "devices": list}
    for k, kind in kinds.items():
        if rec.get(k) is not None and not isinstance(rec[k], kind):
            return f"its {k!r} is not a {kind.__name__} ({json.dumps(rec[k])[:30]})"
    if rec.get("devices") is not None and not all(isinstance(d, str) for d in rec["devices"]):
        return "its 'devices' is not a list of strings"
    conv = rec.get("convergence") or {}
    if conv.get("status") is not None and not isinstance(conv["status"], str):
        return f"its 'convergence.status' is not a string ({json.dumps(conv['status'])[:30]})"
    models = conv.get("models")
    if models is not None and not (isinstance(models, dict) and all(isinstance(v, dict) for v in models.values())):
        return f"its 'convergence.models' is not an object of objects per model ({json.dumps(models)[:30]})"
    tr = rec.get("training") or {}
    for k, kind in (("stopped", str), ("epochs_run", int), ("best_epoch", int), ("max_epochs", int)):
        if tr.get(k) is not None and (isinstance(tr[k], bool) or not isinstance(tr[k], kind)):
            return f"its 'training.{k}' is not a {kind.__name__} ({json.dumps(tr[k])[:30]})"
        if kind is int and tr.get(k) is not None and tr[k] < 0:     # -3 epochs gave -6.1 s/epoch
            return f"its 'training.{k}' is negative ({tr[k]})"
    return None


def _misplaced(path: Path, rec: dict) -> str | None:
    """Why a record does not belong where it lies (None when it does): a record sits at
    ``<experiment>/<config>/<name>.json``; one whose own experiment or config differs (copied or moved by
    hand) would be counted as another experiment's or config's seed."""
    folder, exp_folder = path.parent.name, path.parent.parent.name
    from attnlab.registry import RUN

    if exp_folder not in RUN and not exp_folder.startswith(tuple(f"{p}-" for p in ("efa", "bidir", "fenchel", "kernel"))):
        return None                             # not laid out as a results folder: nothing to compare
    if rec["experiment"] != exp_folder or rec["config"] != folder:
        return (f"it says experiment {rec['experiment']!r}, config {rec['config']!r} but lies in "
                f"{exp_folder}/{folder}/ (a copied or moved record); move it to "
                f"{rec['experiment']}/{rec['config']}/ or remove it")
    return None


# the largest |metric| a record may hold: squares and sums over many seeds stay finite in float64
MAX_METRIC = 1e150


def stderr_warning(msg: str) -> None:
    """The readers' default warning: one line on stderr."""
    import sys

    print(f"attnlab: warning: {msg}", file=sys.stderr)


def load_records(root: Path, paper: str, warn=None) -> list[dict]:
    """The usable records of a paper's experiments under `root`.  A record that cannot be read or used
    is skipped with a one-line warning naming the file (on stderr, or through `warn`)."""
    warn = warn or stderr_warning
    return read_records(record_files(root, f"{paper}-*/*/*.json", warn), warn)


_SPECIAL_FILES = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def record_files(root: Path, pattern: str, warn=None) -> list[Path]:
    """The files under `root` that `pattern` (glob components joined by '/', e.g. ``efa-*/*/*.json``)
    names, sorted, as ``sorted(root.glob(pattern))`` gives them (hidden names left out), except that a
    folder on the way that cannot be listed is named in a one-line warning (glob passed over it in
    silence: a config folder without read permission left its seeds out of the verdicts unsaid), and that
    a named pipe, device or socket among the files is skipped with a warning instead of being opened
    (reading a FIFO blocked every command for ever).  A missing `root` gives no files."""
    import fnmatch

    warn = warn or stderr_warning
    parts = pattern.split("/")
    folders, files = [Path(root)], []
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        below = []
        for folder in folders:
            try:
                with os.scandir(folder) as it:
                    entries = [e for e in it if not e.name.startswith(".") and fnmatch.fnmatchcase(e.name, part)]
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                warn(f"cannot read the folder {folder}: {exc.strerror or exc}; the records in it are left out")
                continue
            for e in entries:
                path = Path(e.path)
                try:
                    mode = os.stat(path).st_mode
                except OSError:                 # (a dangling link: read_json names it)
                    mode = None
                if not last:
                    if mode is not None and stat.S_ISDIR(mode):
                        below.append(path)
                    continue
                kind = next((what for test, what in _SPECIAL_FILES if mode is not None and test(mode)), None)
                if kind:
                    warn(f"skipping results record {path}: it is {kind}, not a file")
                    continue
                files.append(path)
        folders = below
    return sorted(files)


def records_fingerprint(root: Path) -> str:
    """A digest of the record files under `root` (their paths below it and their bytes): what `verify --json`
    stores beside its empirical verdicts, so that `report --verdicts` can tell that they were judged on the
    records its tables show (another folder, or records changed since, gave verdicts beside other tables)."""
    import hashlib

    h = hashlib.sha256()
    for path in record_files(Path(root), "*/*/*.json", lambda m: None):
        try:
            data = path.read_bytes()
        except OSError:
            data = b"(unreadable)"
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def folder_records(folder: Path, pattern: str = "*.json", warn=None) -> list[dict]:
    """The usable records of the files `pattern` names in `folder` (:func:`record_files`, :func:`read_records`),
    each seed once (:func:`unique_records`): what the figures draw (a copied record counted twice, with a
    narrower interval, in a figure whose table counted it once)."""
    warn = warn or stderr_warning
    return unique_records(read_records(record_files(folder, pattern, warn), warn), warn)


def read_records(paths, warn=None, consistent: bool = True) -> list[dict]:
    """The usable records among the files `paths`, in order; each one that cannot be read (a binary file,
    not JSON, nested too deeply, a number beyond float64) or used (:func:`_record_problem`) is skipped
    with a one-line warning naming it (on stderr, or through `warn`).  `attnlab results`, `report` and
    `figures` read records through this; they are held to their config's others (:func:`consistent_records`)
    unless consistent=False (the empirical claims hold the registered seeds' records to each other)."""
    from attnlab.atomic_io import read_json

    warn = warn or stderr_warning
    recs = []
    for p in paths:
        try:
            rec = read_json(p)
        except ValueError as exc:
            warn(f"skipping unreadable results record: {exc}")
            continue
        problem = _record_problem(rec) or _misplaced(Path(p), rec)
        if problem:
            warn(f"skipping results record {p}: {problem}")
            continue
        recs.append(rec)
    recs = _current_judgements(recs, paths, warn)
    return consistent_records(recs, warn) if consistent else recs


def _current_judgements(recs: list[dict], paths, warn) -> list[dict]:
    """`recs` with the convergence of each record judged by another rule than this attnlab's
    (:data:`attnlab.convergence.RULE`) counted as not judged (``converged`` null, the record's and its rows'):
    a record written or migrated under an older rule keeps that rule's judgement, which may no longer hold
    (curve-v4 found still-falling curves that curve-v3 had called levelled).  One warning names how many and
    how to re-judge them."""
    from attnlab.convergence import RULE

    # (a record that trains nothing -- a timing, a pretrained model -- has no convergence to judge under any rule)
    stale = [r for r in recs if isinstance(r.get("convergence"), dict) and r["convergence"].get("rule")
             and r["convergence"]["rule"] != RULE and r["convergence"].get("status") != "not-trained"]
    # and a record whose judgement is missing (no convergence, no rule) or contradicts itself (`converged` against
    # its status, a row's against its model's): `converged: true` beside status at-chance, or with the judgement
    # deleted, counted a run at chance as converged (a verdict moved from inconclusive to holds)
    muddled = [r for r in recs if not any(r is x for x in stale) and _judgement_problem(r)]
    if not stale and not muddled:
        return recs
    folders = sorted({str(Path(p).parent.parent.parent) for p in paths})
    how = f"`python -m attnlab.migrate_convergence {folders[0] if len(folders) == 1 else 'RESULTS_DIR'}`"
    if stale:
        rules = sorted({str(r["convergence"]["rule"]) for r in stale})
        warn(f"{len(stale)} results record(s) were judged by another convergence rule ({', '.join(rules)}) than this "
             f"attnlab's ({RULE}): counted as not judged; re-judge them with {how}")
    if muddled:
        warn(f"{len(muddled)} results record(s) carry no convergence judgement or one that contradicts itself (the "
             f"first: {_judgement_problem(muddled[0])}, seed {muddled[0].get('seed')} of {muddled[0].get('experiment')}"
             f"): counted as not judged; re-judge them with {how}")
    out, ids = [], {id(r) for r in stale + muddled}
    for r in recs:
        if id(r) in ids:
            conv = r["convergence"] if isinstance(r.get("convergence"), dict) else {}
            r = dict(r, converged=None, convergence=dict(conv, status="unknown", models={}),
                     metrics=[dict(m, converged=None) if "converged" in m else m for m in r["metrics"]])
        out.append(r)
    return out


#: the `converged` value each convergence status implies (attnlab.convergence); "not-trained" implies null
_IMPLIED = {"converged": True, "not-levelled": False, "at-chance": False, "unknown": None, "not-trained": None}


def _judgement_problem(rec: dict) -> str:
    """Why a record's convergence judgement cannot be taken as it stands, or "": no judgement (no `convergence`,
    no rule, a status not among attnlab.convergence.STATUSES), or `converged` (the record's, or a row's against
    its model's entry in `convergence.models`) other than its status implies."""
    conv = rec.get("convergence")
    if not isinstance(conv, dict) or not conv.get("rule"):
        return "no convergence judgement stored"
    status = conv.get("status")
    if status not in _IMPLIED:
        return f"an unknown convergence status {status!r}"
    if rec.get("converged") is not _IMPLIED[status]:
        return f"converged {rec.get('converged')!r} beside status {status}"
    per = conv.get("models") if isinstance(conv.get("models"), dict) else {}
    for m in rec.get("metrics") or ():
        if isinstance(m, dict) and "converged" in m:
            entry = per.get(f"{m.get('setting')} {m.get('model')}") or per.get(str(m.get("model")))
            st = entry.get("status") if isinstance(entry, dict) else None
            if st not in _IMPLIED or m["converged"] is not _IMPLIED[st]:
                return f"row {m.get('setting')} {m.get('model')}: converged {m['converged']!r} beside status {st}"
    return ""


def consistent_records(records: list[dict], warn) -> list[dict]:
    """`records` without those written with other config values, or on other data (their `substitute`), than the
    rest of their (experiment, config, tag): the seeds of one config share its values (a folder holding one seed at
    --alpha 0.25 beside four at 1 was averaged into one row).  Compared on the values every record of the group
    names (a value added to a config later is absent from its older records), a record without any left out; the
    majority is kept and the others left out, all of them where no setting has more than half, with a warning
    naming the values that differ and the seeds left out."""
    from attnlab.experiment import _run_config

    groups = defaultdict(list)
    for r in records:
        groups[(r.get("experiment"), r.get("config"), r.get("tag") or "")].append(r)
    drop = set()
    for (exp, cfg, tag), rs in groups.items():
        if len(rs) < 2:
            continue
        # a record without config values (removed, or never written) beside records with them cannot be shown to
        # be of its config: left out (compared on the values every record names, it left nothing to compare, and
        # one such file switched the check off for its whole group)
        bare = [r for r in rs if not (isinstance(r.get("config_values"), dict) and r["config_values"])]
        if bare and len(bare) < len(rs):
            drop.update(id(r) for r in bare)
            warn(f"records of {exp} ({cfg}{', ' + tag if tag else ''}) without config values beside records with "
                 f"them: seed(s) {', '.join(str(r.get('seed')) for r in bare)} left out (the config they ran cannot be "
                 "told)")
            rs = [r for r in rs if not any(r is b for b in bare)]
            if len(rs) < 2:
                continue
        # the data a seed was trained on is part of what the group shares: the paper's data (substitute null)
        # and a substitute were averaged into one row, labelled by whichever file came last
        cvs = [{**(_run_config(r["config_values"]) if isinstance(r.get("config_values"), dict) else {}),
                "substitute": r.get("substitute")} for r in rs]
        common = sorted(set.intersection(*(set(c) for c in cvs)))
        text = [{k: json.dumps(c[k], sort_keys=True, default=str) for k in common} for c in cvs]
        sigs = [json.dumps(t, sort_keys=True) for t in text]
        counts = Counter(sigs)
        if len(counts) == 1:
            continue
        top, n = counts.most_common(1)[0]
        keep = top if 2 * n > len(rs) else None
        out = [r for r, sg in zip(rs, sigs) if sg != keep]
        drop.update(id(r) for r in out)
        differ = [k for k in common if len({t[k] for t in text}) > 1]
        warn(f"records of {exp} ({cfg}{', ' + tag if tag else ''}) were written with different config values "
             f"({', '.join(differ[:4])}): seed(s) {', '.join(str(r.get('seed')) for r in out)} left out"
             + (f" ({n} of {len(rs)} share the other values)" if keep else " (no setting holds a majority)"))
    return [r for r in records if id(r) not in drop]


def _row_status(rec: dict, row: dict) -> bool | None:
    """True (converged), False (not), None (convergence unknown) of one metric row."""
    return True if row_converged(rec, row) else None if row_unknown(rec, row) else False


def unique_rows(records: list[dict], warn=None, notes: dict | None = None):
    """(record, metric row) pairs with each (experiment, config, setting, model, metric, seed) once: a
    copied record (``seed0 (copy).json``) is one seed, not two.  A duplicate with the same value and the
    same convergence is dropped with a warning; duplicates that disagree on either are all dropped (which
    one is right cannot be told: keeping the first file would let a file's name decide), with a warning
    naming them.  Rows without a seed are kept as they are.  `notes`, when given, receives each warning
    under its 6-tuple key (the claims say it where the key is theirs)."""
    warn = warn or stderr_warning
    seen: dict[tuple, list] = {}
    order = []
    for r in records:
        for m in r["metrics"]:
            if not isinstance(r.get("seed"), int):
                order.append((r, m))
                continue
            key = (r["experiment"], r["config"], m["setting"], m["model"], m["metric"], r["seed"])
            if key not in seen:
                seen[key] = []
                order.append(key)
            seen[key].append((r, m))
    for item in order:
        if not isinstance(item, tuple) or len(item) != 6:
            yield item
            continue
        dups = seen[item]
        msg = None
        if len({float(m["value"]) for _, m in dups}) > 1:
            msg = (f"{len(dups)} records of {item[0]} ({item[1]}) seed {item[5]} disagree on {item[3]} / {item[2]} / "
                   f"{item[4]}: {', '.join(repr(m['value']) for _, m in dups)}; that seed is left out")
        elif len({_row_status(r, m) for r, m in dups}) > 1:
            state = {True: "converged", False: "not converged", None: "convergence unknown"}
            msg = (f"{len(dups)} records of {item[0]} ({item[1]}) seed {item[5]} hold the same {item[3]} / {item[2]} / "
                   f"{item[4]} but disagree on its convergence ({', '.join(state[_row_status(r, m)] for r, m in dups)});"
                   " that seed is left out")
        if msg:
            warn(msg)
            if notes is not None:
                notes[item] = msg
            continue
        if len(dups) > 1:
            msg = (f"{len(dups)} records of {item[0]} ({item[1]}) seed {item[5]} hold {item[3]} / {item[2]} / "
                   f"{item[4]}; counted once")
            warn(msg)
            if notes is not None:
                notes[item] = msg
        yield dups[0]


def unique_records(records: list[dict], warn=None) -> list[dict]:
    """`records` as :func:`unique_rows` counts them, for the readers that take whole records (the figures, the
    wall times): a copied record is left out (its rows are the first copy's), and rows that copies disagree on
    are taken out of every record that holds them; `warn` as there."""
    kept: dict[int, list] = defaultdict(list)
    for r, m in unique_rows(records, warn):
        kept[id(r)].append(m)
    return [r if len(kept[id(r)]) == len(r["metrics"]) else {**r, "metrics": kept[id(r)]}
            for r in records if id(r) in kept or not r["metrics"]]


def paper_numbers(paper: str) -> dict:
    try:
        mod = importlib.import_module(f"attnlab.experiments.paper_numbers.{paper}")
    except ModuleNotFoundError:
        return {}
    return dict(getattr(mod, "PAPER_NUMBERS", {}))


def group_runs(records: list[dict], config: str | None = None) -> tuple[dict, Counter, dict, dict]:
    """The runs of `records` (copies counted once), of `config` only where given, per (experiment,
    setting, model, metric, config): ({True: the values of its converged runs, False: the others}, the
    count of runs of unknown convergence, the substitute note, Counter of the devices)."""
    groups: dict[tuple, dict[bool, list[float]]] = defaultdict(lambda: {True: [], False: []})
    unknown: Counter = Counter()
    subst: dict[tuple, str | None] = {}
    devices: dict[tuple, Counter] = defaultdict(Counter)
    for r, m in unique_rows(records):
        if config and r.get("config") != config:
            continue
        key = (r["experiment"], m["setting"], m["model"], m["metric"], r["config"])
        groups[key][row_converged(r, m)].append(float(m["value"]))
        unknown[key] += row_unknown(r, m)
        subst[key] = r.get("substitute")
        devices[key][r.get("device_name") or r.get("device")] += 1
    return groups, unknown, subst, devices


def usable_values(group: dict) -> tuple[list[float], bool]:
    """The values a results row stands on (one group of :func:`group_runs`) and whether they converged:
    its converged runs' values; where none converged (a quick or reduced config), every run's, marked
    not converged.  The runs left out are reported (n_not_converged), never averaged in.  The tables and
    the figures drawn from records both take their numbers from here."""
    return (group[True], True) if group[True] else (group[False], False)


def summarize(paper: str, root: Path, config: str | None = None, records: list[dict] | None = None) -> list[dict]:
    """Rows with ROW_KEYS (+ `diff`, `substitute`, `n_not_converged` and of those `n_unknown`, the runs whose
    convergence could not be judged): one per (experiment, setting, model, metric,
    config) we ran, plus one per paper number we have not run (ours = None).  The seeds of a config
    are pooled whatever device ran them (the verdicts of attnlab.evidence pool them too); `device`
    names it, or, where several did, each with its count of records ("cuda:... ×4; cpu:... ×1").
    `records`: the paper's records as load_records(root, paper) gave them, where the caller has read them."""
    groups, unknown, subst, devices = group_runs(load_records(root, paper) if records is None else records, config)
    numbers = paper_numbers(paper)
    rows, seen = [], set()
    for key in sorted(groups):
        exp, setting, model, metric, cfg = key
        dev = (next(iter(devices[key])) if len(devices[key]) == 1
               else "; ".join(f"{d} ×{n}" for d, n in sorted(devices[key].items(), key=lambda kv: str(kv[0]))))
        vals, _ = usable_values(groups[key])
        mean = sum(vals) / len(vals)
        ref = numbers.get((exp, setting, model, metric))
        seen.add((exp, setting, model, metric))
        rows.append({
            "experiment": exp, "setting": setting, "model": model, "metric": metric,
            "paper": ref, "ours_mean": mean, "ours_ci95": ci95(vals), "n_seeds": len(vals),
            "device": dev, "config": cfg, "diff": None if ref is None else mean - ref,
            "substitute": subst[key], "converged": bool(groups[key][True]),
            "n_not_converged": len(groups[key][False]), "n_unknown": unknown[key],
        })
    for (exp, setting, model, metric), ref in sorted(numbers.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if (exp, setting, model, metric) not in seen:
            rows.append({"experiment": exp, "setting": setting, "model": model, "metric": metric,
                         "paper": ref, "ours_mean": None, "ours_ci95": None, "n_seeds": 0,
                         "device": None, "config": None, "diff": None, "substitute": None,
                         "converged": None, "n_not_converged": 0, "n_unknown": 0})
    return rows


WALL_COLUMNS = ("experiment", "config", "run", "n", "mean wall s", "min-max wall s", "mean epochs",
                "s/epoch", "stopped", "device")
# the keys of a row of wall_times (--json, csv): one value each
WALL_KEYS = ("experiment", "config", "run", "n", "mean wall s", "min wall s", "max wall s", "mean epochs",
             "s/epoch", "stopped", "device")


def wall_times(paper: str, root: Path, config: str | None = None, records: list[dict] | None = None) -> list[dict]:
    """The cost of each (experiment, config, run tag, device) from its records: how many, the mean and
    range of their wall seconds, the mean epochs run, seconds per epoch (wall time, evaluation included,
    over epochs run) and how training stopped (`stopped`: the count of records per stop rule).
    `records`: as for :func:`summarize`."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    # a copied record is one run, not two (said here when the records are read here; a caller that passes them
    # has said it already)
    runs = (unique_records(load_records(root, paper)) if records is None
            else unique_records(records, warn=lambda msg: None))
    for r in runs:
        if (config and r.get("config") != config) or r.get("wall_seconds") is None:
            continue
        groups[(r["experiment"], r["config"], r.get("tag") or "-", r.get("device_name") or r.get("device"))].append(r)
    rows = []
    for (exp, cfg, tag, dev), recs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        wall = [float(r["wall_seconds"]) for r in recs]
        epochs = [(r.get("training") or {}).get("epochs_run") for r in recs]
        per_epoch = [w / e for w, e in zip(wall, epochs) if e]
        stops = defaultdict(int)
        for r in recs:
            stops[(r.get("training") or {}).get("stopped") or "-"] += 1
        rows.append({"experiment": exp, "config": cfg, "run": tag, "n": len(recs),
                     "mean wall s": sum(wall) / len(wall), "min wall s": min(wall), "max wall s": max(wall),
                     "mean epochs": (sum(e for e in epochs if e) / len(per_epoch)) if per_epoch else None,
                     "s/epoch": (sum(per_epoch) / len(per_epoch)) if per_epoch else None,
                     "stopped": dict(sorted(stops.items())), "device": dev})
    return rows


def format_wall_times(rows: list[dict], fmt: str = "table", width: int | None = None) -> str:
    """`rows` of :func:`wall_times` rendered as one of attnlab.tables.FORMATS (a 'table' fit to `width`)."""
    from attnlab.tables import frame, render

    if fmt == "json":
        return render(frame(rows, WALL_KEYS), fmt)
    if fmt == "csv":
        return render(frame([{**r, "stopped": _stops_text(r["stopped"])} for r in rows], WALL_KEYS), fmt)
    return render(frame([wall_display_row(r) for r in rows], WALL_COLUMNS), fmt, width)


def _stops_text(stops: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in stops.items())


def _plain(x: float, nd: int = 3) -> str:
    """x to nd significant digits without an exponent below 1e6 (1000 epochs read '1e+03')."""
    if x == 0 or not math.isfinite(x) or abs(x) >= 1e6:
        return f"{x:.{nd}g}"
    digits = nd - 1 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):.{max(digits, 0)}f}"


def wall_display_row(r: dict) -> dict:
    """A row of :func:`wall_times` as the strings a reader sees (WALL_COLUMNS): the range to the mean's digits (it
    was rounded to whole seconds, '0-3' around a mean of 1.11 whose smallest run took 0.445 s)."""
    shown = {k: (_plain(v) if isinstance(v, float) else "-" if v is None else v) for k, v in r.items()}
    return {**shown, "min-max wall s": f"{_plain(r['min wall s'])}-{_plain(r['max wall s'])}",
            "stopped": _stops_text(r["stopped"])}


SEED_COLUMNS = ("experiment", "config", "setting", "model", "metric", "paper", "n", "seeds", "per seed",
                "converged", "device")


def per_seed(paper: str, root: Path, config: str | None = None) -> list[dict]:
    """One row per (experiment, config, setting, model, metric, device) with every seed's value in seed
    order, beside the paper's number: what a mean ± CI hides (an outlier seed, a run that did not
    train).  `seeds` and `values` are parallel lists; `converged` counts the converged records."""
    groups: dict[tuple, list[tuple[int, float, bool]]] = defaultdict(list)
    for r, m in unique_rows(load_records(root, paper)):
        if config and r.get("config") != config:
            continue
        dev = r.get("device_name") or r.get("device")
        key = (r["experiment"], r["config"], m["setting"], m["model"], m["metric"], dev)
        groups[key].append((r.get("seed"), float(m["value"]), row_converged(r, m)))
    numbers = paper_numbers(paper)
    rows = []
    for key in sorted(groups, key=lambda k: tuple(map(str, k))):
        exp, cfg, setting, model, metric, dev = key
        vals = sorted(groups[key], key=lambda v: (v[0] is None, v[0] if v[0] is not None else 0))
        rows.append({"experiment": exp, "config": cfg, "setting": setting, "model": model, "metric": metric,
                     "paper": numbers.get((exp, setting, model, metric)), "n": len(vals),
                     "seeds": [v[0] for v in vals], "values": [v[1] for v in vals],
                     "converged": sum(v[2] for v in vals), "device": dev})
    return rows


def format_per_seed(rows: list[dict], fmt: str = "table", width: int | None = None) -> str:
    """`rows` of :func:`per_seed` rendered as one of attnlab.tables.FORMATS; csv and json keep the
    lists, the other formats print ``seed: value`` pairs (a 'table' fit to `width`)."""
    from attnlab.tables import frame, render

    if fmt in ("csv", "json"):
        return render(frame(rows, SEED_COLUMNS[:7] + ("seeds", "values", "converged", "device")), fmt)
    shown = [{**r, "paper": _num(r["paper"], 6), "seeds": ", ".join(str(s) for s in r["seeds"]),
              "per seed": ", ".join(_num(v) for v in r["values"]),
              "converged": f"{r['converged']}/{r['n']}"} for r in rows]
    return render(frame(shown, SEED_COLUMNS), fmt, width)


DISPLAY_COLUMNS = ("experiment", "setting", "model", "metric", "paper", "ours (mean ± 95% CI)", "diff", "n",
                   "config", "device", "notes")


def _num(x, nd=4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}g}"
    return str(x)


def notes(row: dict) -> str:
    """What a reader must know before comparing a row with the paper: substitute data, no convergence."""
    out = []
    if row.get("substitute"):
        out.append("substitute data")
    if convergence_note(row):
        out.append(convergence_note(row))
    return "; ".join(out)


def display_row(r: dict) -> dict:
    """A row of :func:`summarize` as the strings a reader sees (DISPLAY_COLUMNS)."""
    ours = "-" if r["ours_mean"] is None else (
        _num(r["ours_mean"]) + ("" if r["ours_ci95"] is None else f" ± {_num(r['ours_ci95'], 2)}"))
    return dict(zip(DISPLAY_COLUMNS, (r["experiment"], r["setting"], r["model"], r["metric"], _num(r["paper"], 6),
                                      ours, _num(r["diff"], 3), str(r["n_seeds"]), _num(r["config"]),
                                      _num(r["device"]), notes(r))))


def table_frame(rows: list[dict], fmt: str = "table"):
    """The DataFrame of `rows` for format `fmt`: the reader's strings (mean ± CI in one cell) for
    'table', 'md' and 'latex'; the raw numbers (ROW_KEYS + diff, substitute) for 'csv' and 'json'."""
    from attnlab.tables import frame

    if fmt in ("csv", "json"):
        return frame(rows, ROW_KEYS + ("diff", "substitute", "n_not_converged", "n_unknown"))
    return frame([display_row(r) for r in rows], DISPLAY_COLUMNS)


def format_rows(rows: list[dict], fmt: str = "table") -> str:
    """`rows` of :func:`summarize` rendered as one of attnlab.tables.FORMATS."""
    from attnlab.tables import render

    return render(table_frame(rows, fmt), fmt)

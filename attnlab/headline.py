"""The headline view of a paper's results: per experiment, the paper's configuration and metric only,
the paper's number beside ours (mean ± 95% CI over n seeds), the registered verdict of the claim about
that row and its data source.  `attnlab results <paper>` prints it by default (``--all``: every row of
:func:`attnlab.results.summarize`, every config and metric) and the report shows it first.

The paper's configuration of an experiment is the config its pre-registered claims use
(theory/preregistration.py; e.g. efa-instacart ``full-es``), ``full`` for an experiment no claim is
about; its metric is the metric of those claims (for an experiment without a claim: the metrics the
paper prints a number for).  A row's verdict is the verdict of every claim whose parts name its setting and
model (as model a or model b) on that metric: on the committed records, the registered (expected) one, which
`attnlab verify` holds them to; on any other records (``--results-dir``, $ATTNLAB_RESULTS, a ./results of
one's own runs), the claim's rule applied to those records (:func:`attnlab.evidence.judge`), so that the
verdict speaks of the numbers beside it.

The rows are those of :func:`attnlab.results.summarize` (one results table); they are rendered by
:mod:`attnlab.tables` (one renderer).
"""
from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

DEFAULT_CONFIG = "full"
HEADLINE_KEYS = ("experiment", "setting", "model", "metric", "paper", "ours_mean", "ours_ci95", "n_seeds",
                 "config", "converged", "n_not_converged", "n_unknown", "claims", "verdicts", "data_source")
OURS = "ours (mean ± 95% CI)"


def registrations(experiment: str | None = None) -> list:
    """The pre-registrations (theory/preregistration.py), of `experiment` only where given."""
    from attnlab.theory.preregistration import REGISTRY

    return [r for r in REGISTRY.values() if experiment is None or r.experiment == experiment]


def headline_config(experiment: str) -> str:
    """The paper's configuration of `experiment`: the config of its registered claims (the most used,
    should they differ; of equally used ones the first registered), DEFAULT_CONFIG for an experiment
    without one."""
    configs = Counter(r.config for r in registrations(experiment))
    return configs.most_common(1)[0][0] if configs else DEFAULT_CONFIG


def headline_metrics(experiment: str) -> tuple[str, ...]:
    """The metrics of `experiment`'s registered claims, in registration order (empty without a claim)."""
    out: list[str] = []
    for r in registrations(experiment):
        for p in r.parts:
            if p.metric not in out:
                out.append(p.metric)
    return tuple(out)


def _settings(part) -> tuple[str, ...]:
    return (part.setting,) if isinstance(part.setting, str) else tuple(part.setting)


def matching_claims(experiment: str, setting: str, model: str, metric: str, config: str) -> list:
    """The registrations of `experiment` at `config` with a part about (setting, model, metric): model a or b
    of it.  A claim registered on another config is judged on other records, so it is not this row's."""
    return [r for r in registrations(experiment) if r.config == config
            and any(p.metric == metric and setting in _settings(p) and model in (p.a, p.b) for p in r.parts)]


def _experiment_source(experiment: str, config: str) -> str | None:
    sources = {r.data_source for r in registrations(experiment) if r.config == config}
    return sources.pop() if len(sources) == 1 else None


def headline_rows(paper: str, root: Path, config: str | None = None, summary: list[dict] | None = None) -> list[dict]:
    """The headline rows of `paper` (HEADLINE_KEYS): per experiment, the rows of
    :func:`attnlab.results.summarize` at the experiment's headline config (or `config`, where given) and
    of its headline metrics that the paper prints a number for or a claim is about, with every paper
    number of those metrics that we have not run there (ours None), in the order of the paper's numbers;
    each with the ids and verdicts of its matching claims and its data source ("paper" / "substitute";
    for a row no claim is about, that of the experiment's claims where they agree, else of its records).
    `summary`: the rows of summarize(paper, root, config) where the caller has them already (the records
    are read, and their warnings printed, once)."""
    from attnlab.evidence import committed_records, judge
    from attnlab.results import paper_numbers, summarize

    rows = summarize(paper, root, config=config) if summary is None else summary
    judged: dict[str, str] = {}
    committed = Path(root).resolve() == committed_records().resolve()

    def verdict(g) -> str:
        if committed:
            return g.expected
        if g.claim not in judged:
            from attnlab.catalog import Skip

            try:
                judged[g.claim] = judge(g, Path(root)).verdict
            except Skip:                     # no usable record of its registered seeds there
                judged[g.claim] = "skipped"
        return judged[g.claim]

    numbers = paper_numbers(paper)
    experiments = sorted({r["experiment"] for r in rows})
    rank = {k: i for i, k in enumerate(numbers)}
    out = []
    for exp in experiments:
        cfg = config or headline_config(exp)
        metrics = headline_metrics(exp) or tuple(dict.fromkeys(k[3] for k in numbers if k[0] == exp)) \
            or tuple(dict.fromkeys(r["metric"] for r in rows if r["experiment"] == exp and r["config"] == cfg))
        kept = [r for r in rows if r["experiment"] == exp and r["config"] == cfg and r["metric"] in metrics]
        if config is not None and config != headline_config(exp) and not any(r["n_seeds"] for r in kept):
            continue                         # asked for another config, of which this experiment has no record
        have = {(r["setting"], r["model"], r["metric"]) for r in kept}
        for (e, setting, model, metric), ref in numbers.items():
            if e == exp and metric in metrics and (setting, model, metric) not in have:
                kept.append({"experiment": e, "setting": setting, "model": model, "metric": metric, "paper": ref,
                             "ours_mean": None, "ours_ci95": None, "n_seeds": 0, "config": cfg, "converged": None,
                             "n_not_converged": 0, "n_unknown": 0, "substitute": None, "device": None, "diff": None})
        # the paper's order: its numbers first as it prints them, then ours by the paper's settings and models
        paper_keys = [k for k in numbers if k[0] == exp]
        s_rank = {s: i for i, s in reversed(list(enumerate(k[1] for k in paper_keys)))}
        m_rank = {m: i for i, m in reversed(list(enumerate(k[2] for k in paper_keys)))}
        kept.sort(key=lambda r: (metrics.index(r["metric"]),
                                 rank.get((exp, r["setting"], r["model"], r["metric"]), len(rank)),
                                 s_rank.get(r["setting"], len(s_rank)), m_rank.get(r["model"], len(m_rank))))
        source = _experiment_source(exp, cfg)
        for r in kept:
            regs = matching_claims(exp, r["setting"], r["model"], r["metric"], cfg)
            if r["paper"] is None and not regs:
                continue                     # neither the paper's nor a claim's: one level down (--all)
            if regs:
                data = ", ".join(sorted({g.data_source for g in regs}))
            elif source:
                data = source
            else:
                data = "substitute" if r.get("substitute") else ("paper" if r["n_seeds"] else None)
            out.append({**{k: r.get(k) for k in HEADLINE_KEYS[:HEADLINE_KEYS.index("claims")]}, "config": cfg,
                        "claims": [g.claim for g in regs], "verdicts": [verdict(g) for g in regs],
                        "data_source": data, "substitute": r.get("substitute"), "device": r.get("device"),
                        "registered_seeds": max((len(g.seeds) for g in regs), default=None)})
    return out


def verdict_text(row: dict) -> str:
    """The verdict words of a row's claims: one word where they agree, else each with its claim's label."""
    from attnlab.catalog import VERDICT_WORDS

    words = [VERDICT_WORDS.get(v, v) for v in row["verdicts"]]
    if not words:
        return "-"
    if len(set(words)) == 1:
        return words[0]
    return "; ".join(f"{w} ({c.split('.results.', 1)[-1]})" for w, c in zip(words, row["claims"]))


def _notes(row: dict) -> str:
    """The row's convergence note, and where its seeds are more than its claims registered, that the verdict
    reads the registered ones only (an eleventh seed far off showed "12.18 ± 19, n = 11" beside "holds")."""
    from attnlab.results import convergence_note

    note = convergence_note(row, " (left out)")
    reg = row.get("registered_seeds")
    if reg and (row.get("n_seeds") or 0) > reg:
        extra = (f"n includes {row['n_seeds'] - reg} seed(s) beyond the {reg} registered (the verdict reads the "
                 "registered)")
        note = f"{note}; {extra}" if note else extra
    return note


def _groups(rows: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["experiment"], []).append(r)
    return groups


def _seeds_text(rows: list[dict]) -> str:
    ns = sorted({r["n_seeds"] for r in rows if r["n_seeds"]})
    if not ns:
        return "no seeds run"
    return f"{ns[0]} seed{'s' * (ns[0] != 1)}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]} seeds"


def caption(experiment: str, rows: list[dict]) -> str:
    """One line naming the experiment, its config, metric(s), seeds and, where every claim about it is on a
    substitute for the same reason, what differs."""
    metrics = ", ".join(dict.fromkeys(r["metric"] for r in rows))
    cfg = rows[0]["config"]
    where = f"the paper's configuration ({cfg})" if cfg == headline_config(experiment) else f"config {cfg}"
    text = (f"{experiment} at {where}, {metrics}: ours = mean ± 95% CI "
            f"over {_seeds_text(rows)} beside the paper's number")
    regs = [g for g in registrations(experiment) if g.config == rows[0]["config"]]
    devs = {g.deviation for g in regs}
    if regs and len(devs) == 1 and all(g.data_source == "substitute" for g in regs):
        text += f"; substitute: {devs.pop()}"
    ran = [r for r in rows if r.get("n_seeds")]
    if len({r["n_seeds"] for r in ran}) > 1 or any(r.get("n_not_converged") or r.get("n_unknown") or
                                                   r.get("converged") is False for r in ran):
        # (time warping: kernel softmax's 2 converged seeds beside continuous softmax's 10 unconverged ones read as a
        # comparison of the models; it is one of different seeds)
        text += ("; the rows stand on different runs (n and notes: the converged ones, or every run where none "
                 "converged): compare models by the claims, which pair seeds")
    return text


def experiment_frame(rows: list[dict], fmt: str = "table"):
    """The DataFrame of one experiment's headline rows as a reader sees them (for 'latex' the mean and
    the CI in two numeric columns, aligned on the decimal point)."""
    from attnlab.results import display_row
    from attnlab.tables import frame

    several = len({r["metric"] for r in rows}) > 1
    out = []
    for r in rows:
        shown = display_row({**r, "diff": None})
        cells = {"setting": r["setting"], "model": r["model"]}
        if several:
            cells["metric"] = r["metric"]
        cells.update({"paper": shown["paper"], OURS: shown[OURS], "n": str(r["n_seeds"]), "verdict": verdict_text(r),
                      "data": r["data_source"] or "-", "notes": _notes(r)})
        out.append(_split_ours(cells) if fmt == "latex" else cells)
    return frame(out, list(out[0]) if out else ())


def _split_ours(cells: dict) -> dict:
    """For LaTeX: "mean ± CI" as two numeric columns, so that siunitx aligns both on the decimal point."""
    out = {}
    for k, v in cells.items():
        if k == OURS:
            mean, _, ci = v.partition(" ± ")
            out["ours"], out["± 95% CI"] = mean, ci or "-"
        else:
            out[k] = v
    return out


# the order in which a narrow terminal narrows, then drops, the columns of a headline table
PRIORITY = ("setting", "model", "metric", OURS, "paper", "n", "verdict", "notes", "data")
KEEP = ("paper", OURS, "n")


def format_headline(rows: list[dict], fmt: str = "table", width: int | None = None) -> str:
    """The headline rows rendered: 'table' and 'md' one titled table per experiment, 'latex' one
    booktabs table per experiment (caption: experiment, config, metric, seeds), 'csv' and 'json' the raw
    rows (lists of claims and verdicts: ';'-joined in csv)."""
    from attnlab.tables import frame, latex, markdown, render, text

    if fmt in ("csv", "json"):
        if fmt == "csv":
            rows = [{**r, "claims": "; ".join(r["claims"]), "verdicts": "; ".join(r["verdicts"])} for r in rows]
        return render(frame(rows, HEADLINE_KEYS), fmt)
    if fmt not in ("table", "md", "latex"):
        return render(frame([], HEADLINE_KEYS), fmt)            # the one error for an unknown format
    parts = []
    for exp, group in _groups(rows).items():
        df = experiment_frame(group, fmt)
        if fmt == "latex":
            cap = caption(exp, group)
            sources = set(df["data"])
            if len(sources) == 1 and "-" not in sources:    # one data source: said once, in the caption
                df = df.drop(columns="data")
                if "; substitute: " not in cap:                # (the caption says the substitute already)
                    cap += f" (data: {'the paper' + chr(39) + 's' if sources == {'paper'} else sources.pop()})"
            parts.append(latex(df, caption=cap, label=f"tab:{exp}"))
        elif fmt == "md":
            parts.append(f"#### {exp}\n\n{caption(exp, group)}.\n\n{markdown(df)}")
        else:
            title = caption(exp, group) if width is None else textwrap.fill(caption(exp, group), max(width, 20))
            parts.append(f"{title}\n" + text(df, width=width, priority=PRIORITY, keep=KEEP))
    if fmt == "latex":
        parts.insert(0, latex_preamble_comment())
    return "\n\n".join(parts)


def latex_preamble_comment() -> str:
    from attnlab.tables import LATEX_PACKAGES

    return (f"% attnlab results: booktabs tables with siunitx S columns; in the preamble: {LATEX_PACKAGES}\n"
            "% a table wider than the text: \\resizebox{\\linewidth}{!}{...} (graphicx) around its tabular")


def format_all(rows: list[dict], fmt: str = "table", width: int | None = None) -> str:
    """Every row of :func:`attnlab.results.summarize` (``attnlab results P --all``): one table as
    :func:`attnlab.results.format_rows` gives it; for 'latex' one booktabs table per experiment."""
    from attnlab.results import DISPLAY_COLUMNS, display_row, format_rows
    from attnlab.tables import frame, latex, text

    if fmt == "table":
        return text(frame([display_row(r) for r in rows], DISPLAY_COLUMNS), width=width,
                    priority=("experiment", "model", OURS, "paper", "n", "setting", "config", "metric", "diff",
                              "notes", "device"), keep=KEEP)
    if fmt != "latex":
        return format_rows(rows, fmt)
    parts = [latex_preamble_comment()]
    for exp, group in _groups(rows).items():
        cells = [_split_ours({k: v for k, v in display_row(r).items() if k != "experiment"}) for r in group]
        df = frame(cells, list(cells[0]))
        parts.append(latex(df, caption=f"{exp}: every config and metric we ran ({_seeds_text(group)}); ours = "
                                       "mean ± 95% CI beside the paper's number", label=f"tab:{exp}-all"))
    return "\n\n".join(parts)

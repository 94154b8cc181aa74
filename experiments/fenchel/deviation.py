"""`attnlab run fenchel-deviation`: lambda* against alpha z in every layer and head of a BERT-like
and a T5-like transformer (Fenchel-dual attention paper, Sec 8, Figs 4-8).

SUBSTITUTE.  The paper measures pretrained bert-base and t5-small on unspecified text.  Those
weights cannot be downloaded offline, so by default this runner trains, per seed, a small BERT-like
encoder (masked-language modelling) and a small T5-like encoder-decoder (span corruption, relative
position bias) on the movie-review sentences of the data layer, then measures them on held-out
sentences.  Its numbers are therefore not the paper's.  With ``--weights PATH`` (a local Hugging
Face copy of bert-base-* or t5-small; needs ``transformers``) it measures the real models instead.

For every query of every head: t_i = x_i/sqrt(d'), z = K^T Q y_k (times sqrt(d') for T5, which has
no 1/sqrt(d')), log u = the additive logit term (T5: relative-position bias, Eq. 17; masks -> u_i = 0),
alpha = 1; lambda* by the exact float64 Newton solver of the dual (7).  Reported per layer (Fig 4,
averaged over heads) and per head (Figs 5-8): the paper's ||lambda* - alpha z|| / ||lambda*||, and the
output-level errors ||h(lambda*) - h(alpha z)|| and TV(p(lambda*), p(alpha z)) (docs/instances.md), with the
first-order predictor alpha ||Sigma z|| / ||z||.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import math
import sys
from pathlib import Path

import numpy as np
import torch

from attnlab.devices import resolve_device
from attnlab.experiment import context, contexts, metric_row
from attnlab.parallel import run_tasks
from attnlab.run_args import experiment_parser, overridden_folder, seeds_of
from attnlab.experiments.fenchel import text as tx
from attnlab.experiments.fenchel.dual_metrics import METRICS, deviation_metrics, head_problems
from attnlab.experiments.pretrained import packaged_model

EXPERIMENT = "fenchel-deviation"
SUBSTITUTE = ("small BERT-like (MLM) and T5-like (span corruption) models trained here on movie-review "
              "sentences, standing in for pretrained bert-base and t5-small (not downloadable offline); "
              "the paper's input text is unspecified")
SUBSTITUTE_HF = "pretrained weights given by --weights; input text = movie-review sentences (the paper's is unspecified)"

CONFIG = dict(d_model=64, n_heads=4, bert_layers=4, t5_layers=3, d_ff=128, dropout=0.1,
              max_words=32, vocab_size=4000, epochs=5, batch_size=64, lr=2e-3, warmup=20,
              train_sentences=None, n_eval=64, alpha=1.0)
ALPHA_RANGE = (1e-100, 1e100)      # --alpha: the metrics (alpha ||Sigma z|| / ||z||, ...) stay within a record's range
# epochs and train_sentences: chosen by the pilot of docs/fenchel_experiments.md (2026-11-27; the
# earlier 2 epochs on 3,000 sentences left the BERT-like model at chance on every seed)
CONFIG_QUICK = dict(CONFIG, d_model=32, n_heads=2, bert_layers=2, t5_layers=2, d_ff=64, epochs=1,
                    vocab_size=800, train_sentences=256, n_eval=6, max_words=16, warmup=5)

BINS = np.linspace(0.0, 0.5, 51)     # Fig 4-8 x-range; the last count holds values > 0.5


# --------------------------------------------------------------------------- training
def _lr_lambda(warmup, total):
    def f(step):
        if step < warmup:
            return (step + 1) / warmup
        return max(0.05, 1.0 - (step - warmup) / max(1, total - warmup))
    return f


def _bert_batch(seqs, vocab, rng):
    ids, valid = tx.pad_batch([tx.bert_inputs(s) for s in seqs])
    inp, labels = tx.mlm_mask(ids, valid, len(vocab), vocab.first_word, rng)
    return inp, valid, labels


def _t5_batch(seqs, vocab, rng):
    pairs = [tx.span_corrupt(s, vocab, rng) for s in seqs]
    src, smask = tx.pad_batch([p[0] for p in pairs])
    tgt, tmask = tx.pad_batch([p[1] for p in pairs])
    tin = torch.cat([torch.full((len(seqs), 1), tx.BOS, dtype=torch.long), tgt[:, :-1]], 1)
    tin_mask = torch.cat([torch.ones(len(seqs), 1, dtype=torch.bool), tmask[:, :-1]], 1)
    labels = tgt.masked_fill(~tmask, -100)
    return src, smask, tin, tin_mask, labels


def _loss(kind, model, batch, device):
    batch = [b.to(device) for b in batch]
    if kind == "bert":
        inp, valid, labels = batch
        target = labels != -100
        logits, labels = model(inp, valid, only=target), labels[target]
    else:
        src, smask, tin, tmask, labels = batch
        logits = model(src, smask, tin, tmask)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=-100)


def build_models(cfg, vocab_size):
    from attnlab.experiments.models.fenchel_transformers import BertLike, T5Like

    bert = BertLike(vocab_size, cfg["d_model"], cfg["n_heads"], cfg["bert_layers"], cfg["d_ff"],
                    max_len=cfg["max_words"] + 2, dropout=cfg["dropout"])
    t5 = T5Like(vocab_size, cfg["d_model"], cfg["n_heads"], cfg["t5_layers"], cfg["d_ff"], cfg["dropout"])
    return {"bert": bert, "t5": t5}


CURVE_POINTS_PER_EPOCH = 10     # held-out loss checkpoints per epoch (the schedule has 2 epochs: too few)


def trivial_loss(kind, vocab, train, evl_batch, seed) -> float:
    """The marginal-frequency predictor's cross entropy on the held-out batch's targets: the targets'
    frequencies over one pass of the training sentences through the model's own masking (add-one
    smoothed over the vocabulary; its own random stream, so training is unchanged):
    attnlab.convergence's trivial value for the model's held-out loss."""
    make = _bert_batch if kind == "bert" else _t5_batch
    rng = np.random.default_rng([seed, 97, 0 if kind == "bert" else 1])
    counts = np.zeros(len(vocab))
    for s in range(0, len(train), 256):
        lab = make(train[s:s + 256], vocab, rng)[-1]
        counts += np.bincount(lab[lab != -100].numpy(), minlength=len(vocab))
    p = (counts + 1.0) / (counts.sum() + len(vocab))
    lab = evl_batch[-1]
    return float(-np.log(p[lab[lab != -100].numpy()]).mean())


def _held_out_loss(kind, model, batch, device) -> float:
    model.eval()
    with torch.no_grad():
        out = float(_loss(kind, model, batch, device))
    model.train()
    return out


def train_models(ctx, cfg, vocab, train, evl, device, curves=None):
    """Train both models, one checkpoint per epoch (resumable).  Returns (models, eval losses).
    `curves` (a dict, filled in): per model, the training loss of every epoch (``train_loss``) and the
    loss on the held-out sentences at ``CURVE_POINTS_PER_EPOCH`` evenly spaced steps of every epoch
    (``eval_loss``, with its ``eval_steps``; the held-out masking is drawn once, so the curve follows
    the model, not the masks).  Measuring it draws from no random stream training uses."""
    torch.manual_seed(ctx.seed)   # parameter initialisation; data order uses explicit generators
    models = build_models(cfg, len(vocab))
    opts = {k: torch.optim.AdamW(m.parameters(), lr=cfg["lr"], weight_decay=0.01) for k, m in models.items()}
    steps_per_epoch = math.ceil(len(train) / cfg["batch_size"])
    total = steps_per_epoch * cfg["epochs"]
    scheds = {k: torch.optim.lr_scheduler.LambdaLR(o, _lr_lambda(cfg["warmup"], total)) for k, o in opts.items()}
    done = {"bert": 0, "t5": 0}
    curves = {} if curves is None else curves
    curves.update({k: {"train_loss": [], "eval_loss": [], "eval_steps": []} for k in models})
    state = ctx.load_checkpoint()
    if state is not None:
        for k in models:
            models[k].load_state_dict(state["models"][k])
            opts[k].load_state_dict(state["opts"][k])
            scheds[k].load_state_dict(state["scheds"][k])
        done = state["done"]
        curves.update(state.get("curves") or {})
    every = max(1, math.ceil(steps_per_epoch / CURVE_POINTS_PER_EPOCH))
    for m in models.values():
        m.to(device)
    prog = ctx.progress(2 * cfg["epochs"], f"{EXPERIMENT} seed {ctx.seed} (train)")
    for kind in ("bert", "t5"):
        model, opt, sch = models[kind], opts[kind], scheds[kind]
        make = _bert_batch if kind == "bert" else _t5_batch
        held_out = make(evl, vocab, np.random.default_rng([ctx.seed, 98, 0 if kind == "bert" else 1]))
        for epoch in range(done[kind], cfg["epochs"]):
            model.train()
            g = torch.Generator().manual_seed(1000 * ctx.seed + epoch)
            rng = np.random.default_rng([ctx.seed, epoch, 0 if kind == "bert" else 1])
            order = torch.randperm(len(train), generator=g).tolist()
            tot = torch.zeros((), dtype=torch.float64, device=device)   # summed on the device: no host sync a step
            for step, s in enumerate(range(0, len(order), cfg["batch_size"])):
                batch = make([train[i] for i in order[s:s + cfg["batch_size"]]], vocab, rng)
                loss = _loss(kind, model, batch, device)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sch.step()
                tot += loss.detach().double()               # (the float64 sum a Python float would give)
                if (step + 1) % every == 0 or step + 1 == steps_per_epoch:
                    curves[kind]["eval_loss"].append(_sig(_held_out_loss(kind, model, held_out, device)))
                    curves[kind]["eval_steps"].append(epoch * steps_per_epoch + step + 1)
            curves[kind]["train_loss"].append(_sig(float(tot) / steps_per_epoch))
            done[kind] = epoch + 1
            ctx.save_checkpoint({"models": {k: m.state_dict() for k, m in models.items()},
                                 "opts": {k: o.state_dict() for k, o in opts.items()},
                                 "scheds": {k: s_.state_dict() for k, s_ in scheds.items()}, "done": done,
                                 "curves": curves})
            prog.update(done["bert"] + done["t5"], model=kind, epoch=epoch + 1,
                        loss=tot / steps_per_epoch)
    losses = {}
    rng = np.random.default_rng([ctx.seed, 99])
    with torch.no_grad():
        for kind, model in models.items():
            model.eval()
            make = _bert_batch if kind == "bert" else _t5_batch
            losses[kind] = float(_loss(kind, model, make(evl, vocab, rng), device))
    return models, losses


def _sig(x: float) -> float:
    """`x` to 7 significant digits (the curves' precision in a record)."""
    return float(f"{float(x):.6e}")


# --------------------------------------------------------------------------- measurement
class _Head:
    """What the measurement needs from one attention module (own models or Hugging Face)."""

    def __init__(self, n_heads, d_head, scale, weights):
        self.n_heads, self.d_head, self.scale, self._w = n_heads, d_head, scale, weights

    def head_weights(self, h):
        return self._w(h)


def _own_heads(model):
    return {name: _Head(a.n_heads, a.d_head, a.scale, a.head_weights) for name, a in model.attentions().items()}


def capture_own(kind, model, evl, vocab, seed, device):
    """Run the trained model on the evaluation sentences and capture every attention's inputs.
    Returns {setting: (capture, valid_q)} and the head descriptions."""
    atts = model.attentions()
    for a in atts.values():
        a.capture = []
    model.eval()
    with torch.no_grad():
        if kind == "bert":
            ids, valid = tx.pad_batch([tx.bert_inputs(s) for s in evl])
            model(ids.to(device), valid.to(device))
            vq = {name: valid for name in atts}
        else:
            rng = np.random.default_rng([seed, 7])
            src, smask, tin, tmask, _ = _t5_batch(evl, vocab, rng)
            model(src.to(device), smask.to(device), tin.to(device), tmask.to(device))
            vq = {name: (smask if name.startswith("enc") else tmask) for name in atts}
    caps = {}
    for name, a in atts.items():
        c = a.capture[0]
        add = c["add"].cpu()
        caps[name] = ({"xq": c["xq"].cpu(), "xk": c["xk"].cpu(), "add": add}, vq[name].cpu())
        a.capture = None
    return caps, _own_heads(model)


def measure(caps, heads, alpha, progress=None):
    """Per setting and head: the metric tensors of :func:`deviation_metrics`."""
    out = {}
    for j, (name, (c, valid)) in enumerate(caps.items()):
        hd = heads[name]
        per_head = []
        for h in range(hd.n_heads):
            W_Q, b_Q, W_K = (w.detach().cpu() for w in hd.head_weights(h))
            add = c["add"]
            add_h = add[:, h] if add.shape[1] > 1 else add[:, 0]          # (B|1, Lq|1, Lk)
            T, logu, z, _ = head_problems(c["xq"], c["xk"], add_h, W_Q, b_Q, W_K, hd.scale, valid)
            per_head.append(deviation_metrics(T, logu, z, alpha))
        out[name] = per_head
        if progress is not None:
            progress.update(j + 1, setting=name)
    return out


def summarise(res):
    """Metric rows (per layer: mean over queries and heads, Fig 4) and the record's extra (per head
    means, Figs 5-8; histograms of rel_dev per head and of the head-averaged rel_dev per layer)."""
    rows, extra = [], {"per_head": {}, "hist_layer": {}, "hist_head": {}, "n_queries": {}, "bins": BINS.tolist()}
    for name, per_head in res.items():
        model = "t5" if "/" in name else "bert"
        for m in METRICS:
            vals = torch.cat([ph[m] for ph in per_head])
            rows.append(metric_row(name, model, f"{m}_mean", float(vals.mean())))
        extra["per_head"][name] = {m: [float(ph[m].mean()) for ph in per_head] for m in METRICS}
        extra["hist_head"][name] = [_hist(ph["rel_dev"]) for ph in per_head]
        # Fig 4: per query, the average over heads (all heads see the same queries and atoms)
        avg = torch.stack([ph["rel_dev"] for ph in per_head]).mean(0)
        extra["hist_layer"][name] = _hist(avg)
        extra["n_queries"][name] = int(per_head[0]["rel_dev"].numel())
    return rows, extra


def _hist(v):
    v = v.numpy()
    counts, _ = np.histogram(np.clip(v, 0, None), bins=BINS)
    return counts.tolist() + [int((v > BINS[-1]).sum())]


# --------------------------------------------------------------------------- Hugging Face weights
def _load_hf(path):
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ValueError("--weights needs the 'transformers' package (pip install 'attnlab[nlp]')") from None
    from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM, T5ForConditionalGeneration
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()                    # attnlab shows its own progress

    p = Path(path)
    if not (p / "config.json").is_file():
        raise ValueError(f"--weights {path}: expected a Hugging Face model folder with config.json "
                         "(and pytorch_model.bin or model.safetensors, and the tokenizer files)")
    cfg = AutoConfig.from_pretrained(p)
    if cfg.model_type == "bert" and "BertForMaskedLM" not in (cfg.architectures or []):
        from transformers import BertModel          # an encoder without the MLM head (e.g. MiniLM)

        model = BertModel.from_pretrained(p, attn_implementation="eager")
    elif cfg.model_type == "bert":
        model = BertForMaskedLM.from_pretrained(p, attn_implementation="eager")
    elif cfg.model_type == "t5":
        model = T5ForConditionalGeneration.from_pretrained(p, attn_implementation="eager")
    else:
        raise ValueError(f"--weights {path}: model_type must be 'bert' or 't5'; got {cfg.model_type!r}")
    tok = AutoTokenizer.from_pretrained(p)
    return cfg.model_type, model.eval(), tok


def hf_attentions(kind, model):
    """{setting: attention module} of a Hugging Face BERT or T5 model."""
    out = {}
    if kind == "bert":
        for i, layer in enumerate(getattr(model, "bert", model).encoder.layer):
            out[f"layer{i + 1}"] = layer.attention.self
    else:
        for i, blk in enumerate(model.encoder.block):
            out[f"enc-self/layer{i + 1}"] = blk.layer[0].SelfAttention
        for i, blk in enumerate(model.decoder.block):
            out[f"dec-self/layer{i + 1}"] = blk.layer[0].SelfAttention
        for i, blk in enumerate(model.decoder.block):
            out[f"cross/layer{i + 1}"] = blk.layer[1].EncDecAttention
    return out


def _hf_head(kind, mod):
    if kind == "bert":
        H, dh, Wq, Wk = mod.num_attention_heads, mod.attention_head_size, mod.query, mod.key
    else:
        H, dh, Wq, Wk = mod.n_heads, mod.key_value_proj_dim, mod.q, mod.k
    scale = float(getattr(mod, "scaling", 1.0 if kind == "t5" else dh ** -0.5))

    def weights(h):
        s = slice(h * dh, (h + 1) * dh)
        bq = Wq.bias[s] if Wq.bias is not None else torch.zeros(dh)
        return Wq.weight[s], bq, Wk.weight[s]
    return _Head(H, dh, scale, weights), Wq, Wk


def capture_hf(kind, model, tok, evl_words, seed):
    """Capture inputs and attention weights by hooks; log u is recovered per head as
    log softmax-weight - scale <K x_i, Q y_k> (exact up to a per-query constant, which the softmax
    ignores), so that masks and T5's relative-position bias enter u as the model applies them."""
    atts = hf_attentions(kind, model)
    store, hooks, heads = {}, [], {}

    def hook(name):
        def f(mod, args, kwargs, output):
            hs = kwargs.get("hidden_states", args[0] if args else None)
            kv = kwargs.get("key_value_states")
            w = [o for o in output if isinstance(o, torch.Tensor) and o.dim() == 4][-1]
            store[name] = (hs.detach(), (kv if kv is not None else hs).detach(), w.detach())
        return f

    for name, mod in atts.items():
        hooks.append(mod.register_forward_hook(hook(name), with_kwargs=True))
        heads[name] = _hf_head(kind, mod)[0]
    texts = [" ".join(w) for w in evl_words]
    try:
        with torch.no_grad():
            if kind == "bert":
                enc = tok(texts, return_tensors="pt", padding=True, truncation=True, max_length=128)
                model(**enc, output_attentions=True)
                vq = {n: enc["attention_mask"].bool() for n in atts}
            else:
                rng = np.random.default_rng([seed, 7])
                src_t, tgt_t = [], []
                for w in evl_words:
                    s, t = _span_corrupt_words(w, rng)
                    src_t.append(s)
                    tgt_t.append(t)
                enc = tok(src_t, return_tensors="pt", padding=True, truncation=True, max_length=128)
                lab = tok(tgt_t, return_tensors="pt", padding=True, truncation=True, max_length=64)
                dec_in = model._shift_right(lab["input_ids"])
                dmask = torch.cat([torch.ones(len(texts), 1, dtype=torch.long), lab["attention_mask"][:, :-1]], 1)
                model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], decoder_input_ids=dec_in,
                      decoder_attention_mask=dmask, output_attentions=True)
                vq = {n: (enc["attention_mask"] if n.startswith("enc") else dmask).bool() for n in atts}
    finally:
        for hk in hooks:
            hk.remove()
    caps = {}
    for name in atts:
        xq, xk, w = store[name]
        hd = heads[name]
        B, Lq, Lk = w.shape[0], w.shape[2], w.shape[3]
        add = torch.empty(B, hd.n_heads, Lq, Lk, dtype=torch.float64)
        for h in range(hd.n_heads):
            W_Q, b_Q, W_K = (t.detach().double() for t in hd.head_weights(h))
            qk = (xq.double() @ W_Q.T + b_Q) @ (xk.double() @ W_K.T).transpose(-1, -2) * hd.scale
            with np.errstate(divide="ignore"):
                add[:, h] = torch.log(w[:, h].double()) - qk
        caps[name] = ({"xq": xq, "xk": xk, "add": add}, vq[name])
    return caps, heads


def _span_corrupt_words(words, rng):
    """T5 span corruption on words, as text with <extra_id_k> sentinels."""
    vocab_ids = list(range(len(words)))
    v = _IdVocab()
    src, tgt = tx.span_corrupt(vocab_ids, v, rng)
    f = lambda seq: " ".join(words[i] if i >= 0 else f"<extra_id_{-i - 1}>" for i in seq[:-1])  # drop [EOS]
    return f(src), f(tgt)


class _IdVocab:
    """Word positions as ids, sentinels as negative ids."""

    def sentinel(self, k):
        return -k - 1


# --------------------------------------------------------------------------- runner
def main(argv: list[str]) -> int:
    p = experiment_parser(EXPERIMENT, __doc__.split("\n\n")[0])
    p.add_argument("--weights", action="append", default=None, metavar="PATH",
                   help="a local Hugging Face copy of bert-base-* or t5-small (repeatable); measures it "
                        "instead of training the substitutes (needs transformers)")
    p.add_argument("--model", choices=("minilm",), default=None,
                   help="a pretrained encoder that installs offline: minilm = sentence-transformers' "
                        "all-MiniLM-L6-v2 (BERT architecture, 6 layers x 12 heads; pip install 'attnlab[minilm]')")
    p.add_argument("--data", default=None, metavar="PATH",
                   help="the movie-review sentences file sentences.tsv.gz (default: the data layer's search)")
    p.add_argument("--alpha", type=float, default=None, help="reliability alpha (paper: 1)")
    p.add_argument("--epochs", type=int, default=None,
                   help="override the substitutes' training epochs (recorded in the config)")
    p.add_argument("--train-sentences", default=None, metavar="N|all",
                   help="override how many training sentences the substitutes see: a count, or all "
                        "(recorded in the config)")
    args = p.parse_args(argv)
    if args.alpha is not None and not (ALPHA_RANGE[0] <= args.alpha <= ALPHA_RANGE[1]):
        # (at 1e200 the first-order predictor alpha ||Sigma z|| / ||z|| left what a record holds, found only after
        # both models had trained)
        raise UsageError(f"--alpha must be a number in [{ALPHA_RANGE[0]:g}, {ALPHA_RANGE[1]:g}]; got {args.alpha}")
    if args.epochs is not None and not 1 <= args.epochs <= 10_000:
        raise UsageError(f"--epochs must be an integer in 1..10000; got {args.epochs}")
    cfg = dict(CONFIG_QUICK if args.quick else CONFIG)
    defaults = dict(cfg)
    if args.alpha is not None:
        cfg["alpha"] = args.alpha
    if args.epochs is not None:
        cfg["epochs"] = args.epochs
    if args.train_sentences is not None:
        text = args.train_sentences.strip()
        if text == "all":
            cfg["train_sentences"] = None
        elif text.isascii() and text.isdigit() and int(text) >= 1:     # ('²' passed isdigit and failed int())
            cfg["train_sentences"] = int(text)
        else:
            raise UsageError(f"--train-sentences must be an integer >= 1 or all; got {args.train_sentences!r}")
    # a value given by a flag that differs from the config's makes another config: its records go to their own
    # folder (full-epochs10, full-alpha0.5); the pretrained models train nothing, so only alpha names theirs
    base = "quick" if args.quick else "full"
    folder = overridden_folder(base, cfg, defaults, {"alpha": "alpha", "epochs": "epochs",
                                                      "train_sentences": "train-sentences"})
    hf_folder = overridden_folder(base, cfg, defaults, {"alpha": "alpha"})
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(f"--device: {exc}") from None
    from attnlab.experiments.data import DataError

    try:
        sentences = tx.load_sentences(args.data)
    except (DataError, ValueError) as exc:
        raise UsageError(f"--data: {exc}") from None
    if args.model:
        args.weights = (args.weights or []) + [str(packaged_model(args.model))]
    if args.weights:
        # pretrained weights: no training; each seed samples its own n_eval sentences of the corpus
        toks = [w for w in (tx.tokenize(s)[:cfg["max_words"]] for s in sentences) if len(w) >= 4]
        return _run_hf(args, cfg, toks, hf_folder)
    train, evl = tx.split_corpus(sentences, cfg["n_eval"], cfg["max_words"])
    if cfg["train_sentences"]:
        if cfg["train_sentences"] > len(train):     # (recorded as given while the whole corpus was used)
            raise UsageError(f"--train-sentences {cfg['train_sentences']}: the training split has {len(train)} "
                             "sentences; give at most that many, or all")
        train = train[:cfg["train_sentences"]]
    vocab = tx.Vocab(train, cfg["vocab_size"])
    tr_ids, ev_ids = [vocab.encode(s) for s in train], [vocab.encode(s) for s in evl]
    cfg["vocab_actual"] = len(vocab)
    if not args.quiet:
        print(f"[{EXPERIMENT}] SUBSTITUTE: {SUBSTITUTE}", file=sys.stderr)

    def one(seed):
        """One seed: trains both substitutes, measures their heads, writes the seed's record and returns
        its lines (None when the record existed)."""
        ctx = context(args, EXPERIMENT, cfg, seed, substitute=SUBSTITUTE, config_name=folder)
        if ctx.done():
            return None
        curves: dict = {}
        models, losses = train_models(ctx, cfg, vocab, tr_ids, ev_ids, device, curves)
        trivial = {kind: trivial_loss(kind, vocab, tr_ids, (_bert_batch if kind == "bert" else _t5_batch)(
            ev_ids, vocab, np.random.default_rng([ctx.seed, 98, 0 if kind == "bert" else 1])), ctx.seed)
            for kind in models}
        rows, extra = [], {"eval_loss": losses, "curves": curves, "trivial_loss": trivial}
        for kind, model in models.items():
            caps, heads = capture_own(kind, model.to("cpu"), ev_ids, vocab, ctx.seed, "cpu")
            res = measure(caps, heads, cfg["alpha"], ctx.progress(len(caps), f"{EXPERIMENT} seed {ctx.seed} ({kind} λ*)"))
            r, e = summarise(res)
            rows += r
            for k, v in e.items():
                if isinstance(v, dict):
                    extra.setdefault(k, {}).update(v)
                else:
                    extra[k] = v
            rows.append(metric_row("training", kind, "eval_loss", losses[kind]))
        path = ctx.write_record(rows, extra=extra, training={"stopped": "fixed-schedule"})
        return _summary(rows, ctx.seed, path)

    run_tasks(args, one, seeds_of(args))                # --jobs / --backend ray fan the seeds out
    return 0


def _sample(toks, n: int, seed: int):
    """n sentences of the corpus drawn without replacement by the run's seed."""
    rng = np.random.default_rng([seed, 23])
    return [toks[i] for i in sorted(rng.choice(len(toks), size=min(n, len(toks)), replace=False))]


def _run_hf(args, cfg, toks, folder: str = "full"):
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")              # weights come from the folder, never a hub
    for wpath in args.weights:
        try:
            kind, model, tok = _load_hf(wpath)
        except (ValueError, OSError) as exc:
            raise UsageError(f"{exc}") from None
        name = Path(wpath).name
        for ctx in contexts(args, EXPERIMENT, dict(cfg, weights=name), tag=f"hf-{name}", substitute=SUBSTITUTE_HF,
                            config_name=folder):
            if ctx.done():
                continue
            evl = _sample(toks, cfg["n_eval"], ctx.seed)
            caps, heads = capture_hf(kind, model, tok, evl, ctx.seed)
            res = measure(caps, heads, cfg["alpha"], ctx.progress(len(caps), f"{EXPERIMENT} {name} λ*"))
            rows, extra = summarise(res)
            rows = [dict(r, model=f"{kind}:{name}") for r in rows]
            path = ctx.write_record(rows, extra=extra)
            if not args.quiet:
                print(_summary(rows, ctx.seed, path), file=sys.stderr)
    return 0


def _summary(rows, seed, path) -> str:
    """The lines printed for one seed's record."""
    return "\n".join([f"seed {seed}: {path}  [substitute models unless --weights]"]
                     + [f"  {r['model']:>6} {r['setting']:<18} {r['metric']:<13} {r['value']:.4f}" for r in rows
                        if r["metric"] in ("rel_dev_mean", "out_err_mean", "tv_mean", "eval_loss")])

"""Fenchel-dual attention experiments: the deviation metric, the attention reparameterisation of the
BERT-/T5-like models, the OT attention layer, and the --quick runs of both runners."""
import json
import math

import numpy as np
import pytest

from attnlab.cli import call
from attnlab.convergence import STATUSES
import torch

from attnlab.experiments.fenchel.dual_metrics import deviation_metrics, head_problems
from attnlab.experiments.models.fenchel_transformers import BertLike, T5Like, relative_position_bucket
from attnlab.experiments.models.fenchel_vit import OTBlock, ViT, ot_attention_weights, same_class_partners


# --------------------------------------------------------------------------- deviation metric
def _instance(seed, n=6, d=5, alpha=0.7):
    """A case with known lambda*: pick lambda, then z from the optimality condition
    lambda* = alpha (mu + z - h(lambda*)) of the dual (7)."""
    g = torch.Generator().manual_seed(seed)
    T = torch.randn(n, d, generator=g, dtype=torch.float64)
    logu = torch.randn(n, generator=g, dtype=torch.float64)
    lam = torch.randn(d, generator=g, dtype=torch.float64)
    u = torch.softmax(logu, 0)
    mu = u @ T
    h = torch.softmax(logu + T @ lam, 0) @ T
    z = lam / alpha - mu + h
    return T, logu, z, lam, alpha, mu, h


def test_deviation_metric_known_answer():
    Ts, ls, zs, want_rel, want_out, want_tv = [], [], [], [], [], []
    for seed in range(4):
        T, logu, z, lam, alpha, mu, h = _instance(seed)
        Ts.append(T), ls.append(logu), zs.append(z)
        want_rel.append(float((alpha * (mu - h)).norm() / lam.norm()))       # = ||lambda* - alpha z|| / ||lambda*||
        p_att = torch.softmax(logu + alpha * T @ z, 0)
        want_out.append(float((h - p_att @ T).norm()))
        want_tv.append(float(0.5 * (torch.softmax(logu + T @ lam, 0) - p_att).abs().sum()))
    out = deviation_metrics(torch.stack(Ts), torch.stack(ls), torch.stack(zs), alpha=0.7)
    np.testing.assert_allclose(out["rel_dev"].numpy(), want_rel, rtol=1e-9)
    np.testing.assert_allclose(out["out_err"].numpy(), want_out, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(out["tv"].numpy(), want_tv, rtol=1e-8, atol=1e-12)
    assert out["max_grad_norm"] < 1e-10


def test_deviation_metric_degenerate_cases():
    # identical templates: Sigma = 0, h = mu for every lambda, so lambda* = alpha z exactly
    T = torch.ones(1, 4, 3, dtype=torch.float64) * torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64)
    z = torch.tensor([[1.0, 2.0, -0.5]], dtype=torch.float64)
    out = deviation_metrics(T, torch.zeros(1, 4, dtype=torch.float64), z, alpha=1.0)
    assert float(out["rel_dev"][0]) < 1e-12 and float(out["tv"][0]) < 1e-12
    # one atom (u_i = 0 elsewhere) is dropped as trivial; two atoms are kept
    T = torch.randn(2, 3, 4, dtype=torch.float64)
    logu = torch.tensor([[0.0, -math.inf, -math.inf], [0.0, 0.0, -math.inf]], dtype=torch.float64)
    out = deviation_metrics(T, logu, torch.randn(2, 4, dtype=torch.float64))
    assert out["kept"].tolist() == [False, True] and out["rel_dev"].numel() == 1
    # small alpha: rel_dev ~ first-order predictor alpha ||Sigma z|| / ||z|| (docs/instances.md)
    T, logu, z, *_ = _instance(9)
    o = deviation_metrics(T[None], logu[None], z[None], alpha=1e-3)
    assert abs(float(o["rel_dev"][0]) / float(o["first_order"][0]) - 1) < 0.02
    with pytest.raises(ValueError, match="alpha"):
        deviation_metrics(T[None], logu[None], z[None], alpha=0.0)


def _attention_probs(att, c, h):
    """The module's own attention weights of head h, computed from its projections."""
    W_Q, b_Q, W_K = att.head_weights(h)
    q = c["xq"] @ W_Q.T + b_Q
    k = c["xk"] @ W_K.T
    add = c["add"][:, h] if c["add"].shape[1] > 1 else c["add"][:, 0]
    return torch.softmax(q @ k.transpose(-1, -2) * att.scale + add, -1)


@pytest.mark.parametrize("kind", ["bert", "t5"])
def test_reparameterisation_reproduces_attention(kind):
    """<t_i, z> + log u_i of head_problems is the model's logit (Sec 8, Eq. 19; T5 without 1/sqrt(d'))."""
    torch.manual_seed(0)
    ids = torch.randint(7, 50, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[1, 6:] = False
    if kind == "bert":
        model = BertLike(50, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=12).eval()
        atts = model.attentions()
        for a in atts.values():
            a.capture = []
        model(ids, mask)
        valid = {n: mask for n in atts}
    else:
        model = T5Like(50, d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
        with torch.no_grad():   # non-zero relative-position bias, so that u is not uniform
            model.enc_bias.emb.weight.normal_(0, 1.0)
            model.dec_bias.emb.weight.normal_(0, 1.0)
        atts = model.attentions()
        for a in atts.values():
            a.capture = []
        tgt = torch.randint(7, 50, (2, 5))
        tmask = torch.ones(2, 5, dtype=torch.bool)
        model(ids, mask, tgt, tmask)
        valid = {n: (mask if n.startswith("enc") else tmask) for n in atts}
    with torch.no_grad():
        for name, a in atts.items():
            c = a.capture[0]
            for h in range(a.n_heads):
                add = c["add"][:, h] if c["add"].shape[1] > 1 else c["add"][:, 0]
                W_Q, b_Q, W_K = a.head_weights(h)
                T, logu, z, idx = head_problems(c["xq"], c["xk"], add, W_Q, b_Q, W_K, a.scale, valid[name])
                p = torch.softmax(logu + (T @ z.unsqueeze(-1)).squeeze(-1), -1)
                want = _attention_probs(a, c, h)[idx[:, 0], idx[:, 1]].double()
                torch.testing.assert_close(p, want, rtol=1e-5, atol=1e-6)
                if kind == "t5" and name.startswith("enc"):       # log u = relative-position bias (Eq. 17)
                    assert float(logu[torch.isfinite(logu)].std()) > 0.1


def test_relative_position_bucket_matches_reference():
    transformers = pytest.importorskip("transformers")
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-200, 201)[None, :]
    for bidir in (True, False):
        ours = relative_position_bucket(rel, bidir, 32, 128)
        ref = T5Attention._relative_position_bucket(rel, bidirectional=bidir, num_buckets=32, max_distance=128)
        assert torch.equal(ours, ref)


# --------------------------------------------------------------------------- OT attention
def test_ot_attention_weights_against_formula():
    """(22) with M = -<t, t'> + C, alpha = 1, written as explicit sums."""
    g = torch.Generator().manual_seed(1)
    B, H, N, NA, gamma = 2, 3, 4, 7, 2.5
    qk = torch.randn(B, H, NA, generator=g, dtype=torch.float64)
    G = torch.randn(B, N, NA, generator=g, dtype=torch.float64)
    u = torch.softmax(torch.randn(B, N, generator=g, dtype=torch.float64), -1)
    mask = torch.ones(B, NA, dtype=torch.bool)
    mask[1, 5:] = False
    p = ot_attention_weights(qk, G, mask, u, gamma)
    for b in range(B):
        for h in range(H):
            A = [t for t in range(NA) if mask[b, t]]
            for t in range(NA):
                want = 0.0
                if t in A:
                    for i in range(N):
                        Z = sum(math.exp((qk[b, h, s] + G[b, i, s]) / gamma) for s in A)
                        want += float(u[b, i]) * math.exp((qk[b, h, t] + G[b, i, t]) / gamma) / Z
                assert abs(float(p[b, h, t]) - want) < 1e-12
    torch.testing.assert_close(p.sum(-1), torch.ones(B, H, dtype=torch.float64))
    # group example (Sec 9): M = 0 within a group, "infinite" across, <t, z> constant -> p*(t) = u_i/|G|
    groups = torch.tensor([0, 0, 1, 1, 1, 2])
    atoms = torch.tensor([0, 2, 5])                     # one atom of u per group
    G = torch.where(groups[atoms][:, None] == groups[None, :], 0.0, -1e4).double()[None]
    u3 = torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64)
    p = ot_attention_weights(torch.zeros(1, 1, 6, dtype=torch.float64), G, torch.ones(1, 6, dtype=torch.bool), u3, 1.0)
    want = torch.tensor([0.1, 0.1, 0.1, 0.1, 0.1, 0.5], dtype=torch.float64)
    torch.testing.assert_close(p[0, 0], want, atol=1e-12, rtol=0)


def test_ot_block_partner_templates():
    torch.manual_seed(0)
    blk = OTBlock(8, 2, 16, 0.0, gamma=math.sqrt(16)).eval()
    x = torch.randn(3, 5, 8)
    base = blk(x)
    # partners = -1 everywhere gives the same output as no partners
    torch.testing.assert_close(blk(x, partner=torch.tensor([-1, -1, -1])), base)
    # a partner changes only the samples that have one
    out = blk(x, partner=torch.tensor([2, -1, -1]))
    assert not torch.allclose(out[0], base[0]) and torch.allclose(out[1:], base[1:])
    labels = torch.tensor([0, 1, 0, 1, 2])
    part = same_class_partners(labels, 1.0, torch.Generator().manual_seed(0))
    assert part.tolist()[4] == -1
    for i, j in enumerate(part.tolist()[:4]):
        assert j != i and labels[j] == labels[i]
    vit, otv = ViT(8, 2, 1, 10, 16, 2, 2, 32, ot=False), ViT(8, 2, 1, 10, 16, 2, 2, 32, ot=True)
    assert sum(p.numel() for p in vit.parameters()) == sum(p.numel() for p in otv.parameters())
    assert otv(torch.rand(4, 1, 8, 8), partner=torch.tensor([1, 0, -1, -1])).shape == (4, 10)


# --------------------------------------------------------------------------- quick runs
def _records(root, exp):
    return [json.loads(p.read_text()) for p in sorted((root / exp / "quick").glob("*.json"))]


def test_deviation_quick_run(tmp_path, monkeypatch):
    from attnlab.experiments.fenchel.deviation import main
    from attnlab.experiments.paper_numbers.fenchel import PAPER_NUMBERS

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    assert main(["--quick", "--seed", "0", "--device", "cpu", "--quiet", "--results-dir", str(tmp_path)]) == 0
    (rec,) = _records(tmp_path, "fenchel-deviation")
    assert "substitute" in rec and "bert-base" in rec["substitute"]
    rows = {(m["setting"], m["model"], m["metric"]): m["value"] for m in rec["metrics"]}
    for key in [("layer1", "bert", "rel_dev_mean"), ("layer2", "bert", "tv_mean"),
                ("enc-self/layer1", "t5", "rel_dev_mean"), ("dec-self/layer2", "t5", "out_err_mean"),
                ("cross/layer1", "t5", "rel_dev_mean"), ("training", "t5", "eval_loss")]:
        assert key in rows and math.isfinite(rows[key])
    for (s, m, met), v in rows.items():
        if met in ("rel_dev_mean", "tv_mean", "out_err_mean", "first_order_mean"):
            assert v >= 0
        if met == "tv_mean":
            assert v <= 1
        if met == "rel_dev_mean":   # the paper's keys match ours
            assert ("fenchel-deviation", s, m, met) in PAPER_NUMBERS
    ex = rec["extra"]
    assert len(ex["per_head"]["layer1"]["rel_dev"]) == 2           # quick config: 2 heads
    assert sum(ex["hist_layer"]["layer1"]) == ex["n_queries"]["layer1"] > 0
    # the curves attnlab.convergence judges each model by (issue 44)
    for kind in ("bert", "t5"):
        c = ex["curves"][kind]
        assert len(c["train_loss"]) == 1 and len(c["eval_loss"]) == len(c["eval_steps"]) >= 3
        assert c["eval_steps"] == sorted(c["eval_steps"]) and ex["trivial_loss"][kind] > 0
        assert rec["convergence"]["models"][kind]["status"] in STATUSES
    # the figures render from these records
    from attnlab.paper_figures import fenchel_experiments as F

    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    for name in ("fenchel-exp-fig4-bert", "fenchel-exp-fig4-t5", "fenchel-exp-fig7", "fenchel-exp-output-errors"):
        (png,) = F.FIGURES[name](tmp_path / "figs")
        assert png.stat().st_size > 10_000


def test_ot_vit_quick_run_and_errors(tmp_path, monkeypatch, capsys):
    from attnlab.experiments.fenchel.ot_vit import main

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    assert main(["--quick", "--seed", "0", "--device", "cpu", "--quiet", "--results-dir", str(tmp_path)]) == 0
    (rec,) = _records(tmp_path, "fenchel-ot-vit")
    assert "digits" in rec["substitute"]
    vals = {(m["setting"], m["model"], m["metric"]): m["value"] for m in rec["metrics"]}
    assert set(vals) == {("digits/lr=3e-03", mo, me) for mo in ("vit", "ot-vit") for me in ("test_acc", "train_acc")}
    assert all(0 <= v <= 1 for v in vals.values())
    curves = rec["extra"]["curves"]["digits/lr=3e-03"]
    for mo in ("vit", "ot-vit"):                                   # quick: 2 epochs; the last is the reported one
        assert len(curves[mo]["train_loss"]) == len(curves[mo]["test_acc"]) == 2
        assert curves[mo]["test_acc"][-1] == vals[("digits/lr=3e-03", mo, "test_acc")]
    assert 0 < rec["extra"]["majority_class_accuracy"] < 1
    assert set(rec["convergence"]["models"]) == {"digits/lr=3e-03 vit", "digits/lr=3e-03 ot-vit"}
    from attnlab.paper_figures import fenchel_experiments as F

    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    (png,) = F.FIGURES["fenchel-exp-ot-vit"](tmp_path / "figs")
    assert png.stat().st_size > 10_000
    assert call(main, ["--dataset", "cifar10", "--quick", "--results-dir", str(tmp_path)]) == 2
    assert "cifar-10-batches-py" in capsys.readouterr().err
    assert call(main, ["--dataset", "mnist", "--results-dir", str(tmp_path)]) == 2
    assert "--dataset must be one of" in capsys.readouterr().err


# --------------------------------------------------------------------------- --weights (Hugging Face) path
class _WordTokenizer:
    """Stands in for a Hugging Face tokenizer: words hashed into a small vocabulary."""

    def __call__(self, texts, return_tensors="pt", padding=True, truncation=True, max_length=128):
        ids = [[3 + (sum(map(ord, w)) % 40) for w in t.split()][:max_length] + [1] for t in texts]
        L = max(map(len, ids))
        input_ids = torch.tensor([s + [0] * (L - len(s)) for s in ids])
        return {"input_ids": input_ids, "attention_mask": (torch.arange(L)[None] < torch.tensor([len(s) for s in ids])[:, None]).long()}


@pytest.mark.parametrize("kind", ["bert", "t5"])
def test_hf_capture_recovers_u(kind, tmp_path):
    """On randomly initialised Hugging Face models (no download): u recovered from the hooks is uniform
    for BERT and exp(relative-position bias) for T5 (Eqs. 17-18), and the metrics are finite."""
    transformers = pytest.importorskip("transformers")
    from attnlab.experiments.fenchel.deviation import _load_hf, capture_hf, measure

    torch.manual_seed(0)
    if kind == "bert":
        cfg = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=32, attn_implementation="eager")
        model = transformers.BertForMaskedLM(cfg).eval()
    else:
        cfg = transformers.T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
                                    decoder_start_token_id=0, attn_implementation="eager")
        model = transformers.T5ForConditionalGeneration(cfg).eval()
        with torch.no_grad():
            model.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.normal_(0, 1.0)
    words = [["the", "film", "is", "a", "quiet", "triumph", "of", "style"], ["dull", "and", "long", "but", "kind"]]
    caps, heads = capture_hf(kind, model, _WordTokenizer(), words, seed=0)
    name = "layer1" if kind == "bert" else "enc-self/layer2"
    c, valid = caps[name]
    for h in range(heads[name].n_heads):
        logu = c["add"][:, h].double()
        for b in range(2):
            for k in torch.nonzero(valid[b]).flatten().tolist():
                row = logu[b, k][valid[b]]
                if kind == "bert":
                    assert float(row.max() - row.min()) < 1e-4          # uniform u
                else:
                    bias = model.encoder.block[0].layer[0].SelfAttention.compute_bias(logu.shape[-2], logu.shape[-1]).detach()
                    diff = row - bias[0, h, k][valid[b]].double()
                    assert float(diff.max() - diff.min()) < 1e-4       # log u = bias + const
    res = measure({name: caps[name]}, heads, 1.0)
    assert all(torch.isfinite(r["rel_dev"]).all() for r in res[name])
    with pytest.raises(ValueError, match="config.json"):
        _load_hf(tmp_path)


def test_packaged_model_absent_names_the_extra(monkeypatch, tmp_path, capsys):
    """--model minilm without the 'minilm' extra: one line naming the extra, exit 2 (no traceback)."""
    from attnlab.errors import UsageError
    from attnlab.experiments import pretrained
    from attnlab.experiments.fenchel import deviation

    monkeypatch.setitem(pretrained.PACKAGED, "minilm", ("attnlab_no_such_model_package", "x", "minilm"))
    with pytest.raises(UsageError, match=r"pip install 'attnlab\[minilm\]'"):
        pretrained.packaged_model("minilm")
    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    assert call(deviation.main, ["--model", "minilm", "--seed", "0", "--results-dir", str(tmp_path)]) == 2
    assert "attnlab[minilm]" in capsys.readouterr().err
    assert call(deviation.main, ["--model", "bert-base", "--results-dir", str(tmp_path)]) == 2
    assert not list(tmp_path.rglob("*.json"))


def test_minilm_extraction_and_metrics(monkeypatch, tmp_path):
    """With the extra installed: the packaged encoder is extracted once (atomically) and the deviation
    metrics of its first layer come out finite, with u uniform over the non-padding tokens."""
    pytest.importorskip("all_minilm_l6_v2")
    pytest.importorskip("transformers")
    from attnlab.experiments.fenchel.deviation import _load_hf, capture_hf, measure
    from attnlab.experiments.pretrained import packaged_model

    monkeypatch.setenv("ATTNLAB_RUNS", str(tmp_path / "runs"))
    path = packaged_model("minilm")
    assert (path / "config.json").is_file() and not list(path.parent.glob("*.partial"))
    assert packaged_model("minilm") == path                                # second call: no re-extraction
    kind, model, tok = _load_hf(path)
    assert kind == "bert"
    caps, heads = capture_hf(kind, model, tok, [["a", "quiet", "moving", "film"], ["not", "worth", "it"]], seed=0)
    assert len(caps) == 6 and heads["layer1"].n_heads == 12
    c, valid = caps["layer1"]
    row = c["add"][0, 0, 1][valid[0]]
    assert float(row.max() - row.min()) < 1e-4
    res = measure({"layer1": caps["layer1"]}, heads, 1.0)
    assert all(bool(torch.isfinite(r["rel_dev"]).all()) and float(r["rel_dev"].max()) < 1 for r in res["layer1"])




def _idx_gz(path, arr):
    import gzip

    arr = np.asarray(arr, dtype=np.uint8)
    head = (0x0800 | arr.ndim).to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(head + arr.tobytes())


def test_ot_vit_local_data_is_checked_before_training(tmp_path):
    """A truncated IDX file, 100 images with 60 labels, labels up to 249, a crafted CIFAR pickle: each a one-line
    UsageError before any training (they were an EOFError traceback, an IndexError mid-run, or code run by
    pickle); --data with the default digits data set is refused, not ignored."""
    import os
    import pickle

    from attnlab.errors import UsageError
    from attnlab.experiments.fenchel import ot_vit

    def fm(folder, n_tr=100, n_lab=100, top=9):
        folder.mkdir()
        rng = np.random.default_rng(0)
        _idx_gz(folder / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (n_tr, 28, 28)))
        _idx_gz(folder / "train-labels-idx1-ubyte.gz", rng.integers(0, top + 1, n_lab))
        _idx_gz(folder / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (10, 28, 28)))
        _idx_gz(folder / "t10k-labels-idx1-ubyte.gz", rng.integers(0, 10, 10))
        return folder

    ok = fm(tmp_path / "ok")
    assert ot_vit.load_local("fashion-mnist", str(ok))[0].shape == (100, 1, 28, 28)
    for folder, frag in ((fm(tmp_path / "few", n_lab=60), "100 images and 60 labels"),
                         (fm(tmp_path / "lab", top=249), "not in [0, 9]")):
        with pytest.raises(FileNotFoundError, match=frag.replace("[", r"\[").replace("]", r"\]")):
            ot_vit.load_local("fashion-mnist", str(folder))
    trunc = fm(tmp_path / "trunc")
    data = (trunc / "train-images-idx3-ubyte.gz").read_bytes()
    (trunc / "train-images-idx3-ubyte.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(FileNotFoundError, match="corrupt"):
        ot_vit.load_local("fashion-mnist", str(trunc))

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo crafted",))

    cif = tmp_path / "cifar"
    cif.mkdir()
    for n in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(cif / n, "wb") as fh:
            pickle.dump({"data": Evil(), "labels": [0]}, fh)
    with pytest.raises(FileNotFoundError, match="refused unread"):
        ot_vit.load_local("cifar10", str(cif))
    with pytest.raises(UsageError, match="--data is for --dataset"):
        ot_vit.main(["--quick", "--data", str(ok), "--results-dir", str(tmp_path / "r")])


def test_t5_like_with_a_left_padded_target_stays_finite():
    """The first target position padded: under the causal mask its query row excludes every key, and the softmax
    of -inf's was NaN, which the next layer spread to every position of the sequence.  Now that row gives 0 (as
    SDPA) and the real positions equal those of the same target with the pad's id changed (it is not attended)."""
    torch.manual_seed(0)
    t = T5Like(12, d_model=8, n_heads=2, n_layers=2, d_ff=8).eval()
    src, sm = torch.randint(0, 12, (2, 5)), torch.ones(2, 5, dtype=torch.bool)
    tgt, tm = torch.randint(0, 12, (2, 4)), torch.ones(2, 4, dtype=torch.bool)
    tm[0, 0] = False
    with torch.no_grad():
        out = t(src, sm, tgt, tm)
        tgt2 = tgt.clone()
        tgt2[0, 0] = (tgt[0, 0] + 1) % 12
        out2 = t(src, sm, tgt2, tm)
    assert bool(torch.isfinite(out).all())
    assert torch.allclose(out[0, 1:], out2[0, 1:]) and torch.equal(out[1], out2[1])


def test_fenchel_models_refuse_what_they_cannot_mean():
    """n_heads = 0 and patch = 0 were ZeroDivisionErrors, dim not divisible by heads an AssertionError without
    ot, vocab = 0 and n_layers = -1 built empty models, gamma = NaN gave NaN weights."""
    for build, frag in ((lambda: BertLike(10, n_heads=0), "n_heads"), (lambda: BertLike(0), "vocab"),
                        (lambda: BertLike(10, n_layers=-1), "n_layers"), (lambda: T5Like(10, d_model=0), "d_model"),
                        (lambda: ViT(8, 0, 1, 10), "patch"), (lambda: ViT(8, 2, 1, 10, dim=6, heads=4), "divisible"),
                        (lambda: ViT(8, 2, 1, 1), "n_classes")):
        with pytest.raises(ValueError, match=frag):
            build()
    qk, G = torch.zeros(1, 1, 3), torch.zeros(1, 2, 3)
    with pytest.raises(ValueError, match="gamma must be a finite number > 0"):
        ot_attention_weights(qk, G, torch.ones(1, 3, dtype=torch.bool), torch.full((1, 2), 0.5), float("nan"))


def test_fenchel_models_check_their_inputs():
    """A sequence longer than max_len and a partner outside the batch were IndexErrors."""
    b = BertLike(10, d_model=8, n_heads=2, n_layers=1, d_ff=8, max_len=4)
    with pytest.raises(ValueError, match="at most max_len = 4"):
        b(torch.zeros(1, 5, dtype=torch.long), torch.ones(1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 9\]"):
        b(torch.full((1, 3), 10), torch.ones(1, 3, dtype=torch.bool))
    v = ViT(4, 2, 1, 3, dim=8, depth=1, heads=2, mlp_dim=8, ot=True).eval()
    img = torch.randn(2, 1, 4, 4)
    assert v(img, partner=torch.tensor([1, -1])).shape == (2, 3)
    for bad in (torch.tensor([2, -1]), torch.tensor([0, -2]), torch.tensor([0])):
        with pytest.raises(ValueError, match="partner must"):
            v(img, partner=bad)

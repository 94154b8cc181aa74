"""`--setup authors` of kernel-time-warping, kernel-forda and kernel-ecg: the released code's choices, pinned
beside ours (docs/kernel_experiments.md, "Our setup against the authors' code")."""
import pytest
import torch

from attnlab.experiments.models.kernel_models import GaussianBasis, SeriesAttentionNet, TimeWarpingNet, ridge_operator
from attnlab.numerics.continuous_layers import moments_from_discrete


def _net(setup):
    torch.manual_seed(0)
    return TimeWarpingNet("kernel_softmax", 95, 16, 16, 40, 32, setup=setup).double()


def test_observation_times_encoder_and_mu():
    ours, authors = _net("ours"), _net("authors")
    L = 95
    lin = torch.linspace(0.0, 1.0, L)                      # float32, as the model builds them
    mid = (torch.arange(L, dtype=torch.float32) + 0.5) / L
    assert float(mid[0]) == pytest.approx(0.5 / L) and float(mid[-1]) == pytest.approx(1 - 0.5 / L)
    basis = GaussianBasis(16, (0.1, 0.5))
    assert torch.equal(ours.G, ridge_operator(lin, basis, 0.01).double())
    assert torch.equal(authors.G, ridge_operator(mid, basis, 0.01).double())
    assert not torch.allclose(ours.G, authors.G, atol=1e-4)
    assert isinstance(ours.encoder[-1], torch.nn.ReLU) and isinstance(authors.encoder[-1], torch.nn.Linear)
    # the same seed draws the same parameters: only the wiring differs
    for (n, a), (_, b) in zip(ours.named_parameters(), authors.named_parameters()):
        assert torch.equal(a, b), n
    x = torch.randn(8, L, dtype=torch.float64)
    mu_ours, mu_authors = ours.params(x)["mu"], authors.params(x)["mu"]
    assert bool(((mu_ours > 0) & (mu_ours < 1)).all())
    z = authors.encoder(x)
    assert torch.equal(mu_authors, authors.mu(z))          # no sigmoid
    assert bool((z < 0).any())                             # no ReLU at the encoder's end


def test_setup_is_checked():
    with pytest.raises(ValueError, match="setup must be one of ours, authors"):
        TimeWarpingNet("kernel_softmax", setup="keras")


def test_discrete_moment_positions():
    """ours: linspace(0, 1, L); authors (the released FordA code): l/L, l = 1..L; mu and sigma^2 by hand."""
    L = 7
    p = torch.softmax(torch.randn(3, L, dtype=torch.float64), -1)
    for name, pos in (("linspace", torch.linspace(0.0, 1.0, L, dtype=torch.float64)),
                      ("index", torch.arange(1, L + 1, dtype=torch.float64) / L)):
        mu, s2 = moments_from_discrete(p, name)
        ref_mu = sum(p[:, i] * float(pos[i]) for i in range(L))
        ref_s2 = sum(p[:, i] * (float(pos[i]) - ref_mu) ** 2 for i in range(L))
        assert torch.allclose(mu, ref_mu, rtol=1e-14) and torch.allclose(s2, ref_s2.clamp_min(1e-4), rtol=1e-12)
    assert torch.equal(moments_from_discrete(p)[0], moments_from_discrete(p, "linspace")[0])
    with pytest.raises(ValueError, match="positions must be 'linspace' or 'index'"):
        moments_from_discrete(p, "midpoint")


@pytest.mark.parametrize("kind", ["cts_softmax", "cts_sparsemax", "kernel_softmax"])
def test_series_net_setup_moves_only_the_unimodal_moments(kind):
    nets = {}
    for setup in ("ours", "authors"):
        torch.manual_seed(0)
        nets[setup] = SeriesAttentionNet(kind, 20, 2, hidden=8, n_basis=6, setup=setup).double()
    for (n, a), (_, b) in zip(nets["ours"].named_parameters(), nets["authors"].named_parameters()):
        assert torch.equal(a, b), n                        # the same seed draws the same parameters
    h = nets["ours"].states(torch.randn(4, 20, dtype=torch.float64))
    (p0, prm0), (p1, prm1) = nets["ours"].attention_params(h), nets["authors"].attention_params(h)
    assert torch.equal(p0, p1)
    if kind == "kernel_softmax":                           # no discrete moments: the setups agree
        assert torch.equal(prm0["gamma"], prm1["gamma"])
    else:
        assert torch.equal(prm0["mu"], moments_from_discrete(p0, "linspace")[0][:, None])
        assert torch.equal(prm1["mu"], moments_from_discrete(p1, "index")[0][:, None])
        assert not torch.allclose(prm0["mu"], prm1["mu"])
    with pytest.raises(ValueError, match="setup must be one of ours, authors"):
        SeriesAttentionNet(kind, 20, 2, setup="keras")


def test_forda_setup_authors_records_beside_ours(tmp_path):
    """--setup authors runs the authors' wiring and stores under <config>-authors (quick, one model)."""
    import json

    from attnlab.cli import main

    rc = main(["run", "kernel-forda", "--quick", "--setup", "authors", "--models", "cts_softmax", "--seed", "0",
               "--results-dir", str(tmp_path), "--quiet"])
    assert rc == 0
    recs = list(tmp_path.rglob("*.json"))
    assert [r.parent.name for r in recs] == ["quick-authors"]
    rec = json.loads(recs[0].read_text())
    assert rec["config_values"]["setup"] == "authors"

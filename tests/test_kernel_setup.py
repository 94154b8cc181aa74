"""`kernel-time-warping --setup authors`: the released time-warping code's choices, pinned beside ours
(docs/kernel_experiments.md, "Our setup against the authors' code")."""
import pytest
import torch

from attnlab.experiments.models.kernel_models import GaussianBasis, TimeWarpingNet, ridge_operator


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

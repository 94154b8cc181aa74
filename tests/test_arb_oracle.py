"""theory._arb, the claims' rigorous oracle (Arb ball arithmetic): its enclosures contain closed forms
at the digits asked for, and it refuses an integrand whose enclosure is not a finite real ball."""
import mpmath as mp
import pytest

from attnlab.theory._arb import digits, enclosure, integral


@pytest.mark.parametrize("dps", [15, 30, 62])
def test_enclosure_contains_the_closed_form(dps):
    from flint import arb

    with digits(dps):
        gauss = enclosure(integral(lambda t: (-t * t).exp(), [-10, 0, 10]))
        # a float knot enters as its binary value: int_0^0.1 e^t dt = e^0.1 - 1 with 0.1 = mpf(0.1)
        expo = enclosure(integral(lambda t: t.exp(), [0, 0.05, 0.1]))
        ratio = enclosure(integral(lambda t: (-t * t).exp(), [-10, 10]) / arb.pi().sqrt())
    with mp.workdps(dps + 20):
        exact = [mp.sqrt(mp.pi) * mp.erf(10), mp.exp(mp.mpf(0.1)) - 1, mp.erf(10)]
        for (mid, rad), x in zip((gauss, expo, ratio), exact):
            assert 0 < rad <= mp.mpf(10) ** -dps * abs(x)
            assert abs(mid - x) <= rad


def test_refuses_an_integrand_that_is_not_analytic_on_the_path():
    with digits(20), pytest.raises(ValueError, match="not a finite real ball"):
        integral(lambda t: 1 / (t - 0.5), [0, 1])                      # a pole on the path

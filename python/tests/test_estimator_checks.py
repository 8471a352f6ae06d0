"""scikit-learn's own API checks on dnmf.NMF and dnmf.NMFk; a check either estimator cannot pass is listed below
with the reason, so that it shows as an expected failure (xfail), never as a pass."""
from sklearn.utils.estimator_checks import parametrize_with_checks

import dnmf

# NMFk leaves out (with a UserWarning) the ks of k_range beyond min(n_samples, n_features), so its defaults pass
# on scikit-learn's small matrices too (30 of 48 checks failed with "k=4 does not fit a 30x3 matrix").
EXPECTED_FAILURES = {}


def expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    # precision='f32' and 'f64' change the output's dtype, which the preserves_dtype tag must say (it did not).
    [dnmf.NMF(max_iter=300), dnmf.NMF(max_iter=300, precision="f32"), dnmf.NMF(max_iter=300, precision="f64"),
     dnmf.NMFk(k_range=(1, 2), n_perturbations=3, max_iter=50, n_threads=1),
     dnmf.NMFk(n_perturbations=3, max_iter=50, n_threads=1)],
    expected_failed_checks=expected_failures,
)
def test_scikit_learn_checks(estimator, check):
    check(estimator)

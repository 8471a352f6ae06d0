"""scikit-learn's own API checks on dnmf.NMF and dnmf.NMFk; a check either estimator cannot pass is listed below
with the reason, so that it shows as an expected failure (xfail), never as a pass."""
from sklearn.utils.estimator_checks import parametrize_with_checks

import dnmf

# dnmf needs 1 <= k <= min(n_samples, n_features) for every k it factors (the library refuses other ranks with a
# message naming the k and the shape). scikit-learn's checks fit a single sample or feature and expect either
# success or a message about one sample; NMF's default n_components='auto' picks k = 1 there, NMFk's k_range
# (1, 2) contains 2.
K_MUST_FIT = "dnmf needs every k of k_range to fit min(n_samples, n_features); the message names the k that does not"
EXPECTED_FAILURES = {
    "NMFk": {"check_fit2d_1sample": K_MUST_FIT, "check_fit2d_1feature": K_MUST_FIT},
}


def expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    # precision='f32' and 'f64' change the output's dtype, which the preserves_dtype tag must say (it did not).
    [dnmf.NMF(max_iter=300), dnmf.NMF(max_iter=300, precision="f32"), dnmf.NMF(max_iter=300, precision="f64"),
     dnmf.NMFk(k_range=(1, 2), n_perturbations=3, max_iter=50, n_threads=1)],
    expected_failed_checks=expected_failures,
)
def test_scikit_learn_checks(estimator, check):
    check(estimator)

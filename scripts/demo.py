"""The Python part of `make demo`: dnmf.NMF as scikit-learn's NMF is used, then dnmf.NMFk choosing k."""
import numpy as np

import dnmf

rng = np.random.default_rng(0)
X = rng.random((300, 6)) @ rng.random((6, 200))  # a planted rank-6 matrix, C order as numpy makes it (not copied)
X *= (1 + 0.02 * rng.standard_normal(X.shape)).clip(0)  # with 2% noise
model = dnmf.NMF(n_components=6, solver="hals", max_iter=2000, tol=1e-6, random_state=0)
W = model.fit_transform(X)
rel = model.reconstruction_err_ / np.linalg.norm(X)
print(f"python demo: dnmf.NMF k=6 on {X.shape}: relative error {rel:.2e} (the noise is 2e-2) "
      f"after {model.n_iter_} iterations")

selector = dnmf.NMFk(k_range=(2, 9), n_perturbations=10, random_state=1, n_threads=1).fit(X)
print(f"python demo: dnmf.NMFk chose k={selector.k_} (planted 6)")
print(selector.table_)

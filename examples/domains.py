"""Several domains: MultiBoost against one model of all rows pooled, domain by domain.

    python examples/domains.py

The multisource generator's domains follow conflicting rules; MultiBoost's Q-ensemble weighs each
member by how likely a row is to come from the member's domain, and targets the worst domain's loss.
The domain id can travel as a column of X (``domain_column``), which cross-validation splits with the rows.
"""
import numpy as np
from sklearn.model_selection import train_test_split

from mpiboost.data import synth
from mpiboost.sklearn import AdaBoostClassifier, MultiBoostClassifier

data = synth.module("multisource").generate(6000, seed=1, domains=3)
X = np.column_stack([data.X, data.domain])  # the last column is the domain id
Xtr, Xte, ytr, yte = train_test_split(X, data.y, test_size=0.5, random_state=0, stratify=data.domain)
pooled = AdaBoostClassifier(rounds=100).fit(Xtr[:, :-1], ytr)  # stumps: one rule for every domain
multi = MultiBoostClassifier(rounds=100, domain_column=-1).fit(Xtr, ytr)
for k in range(3):
    rows = Xte[:, -1] == k
    e_pool = np.mean(pooled.predict(Xte[rows, :-1]) != yte[rows])
    e_multi = np.mean(multi.predict(Xte[rows]) != yte[rows])
    print(f"domain {k}: pooled AdaBoost error {e_pool:.3f}   MultiBoost error {e_multi:.3f}")

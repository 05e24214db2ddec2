"""Transfer: 30 labelled target rows and two source domains, one related and one not.

    python examples/transfer.py

Domain 0 is the target, 1 and 2 the sources. MSDTrA's source trust (the default) checks on held-out
target rows whether the sources help, and falls back to the target rows alone when they do not.
"""
import numpy as np

from mpiboost.data import synth
from mpiboost.sklearn import AdaBoostClassifier, MSDTrAClassifier

gen = synth.module("transfer")
data = gen.generate(2000, seed=1, sources=2, target_n=1030, related=1)
target = np.flatnonzero(data.domain == 0)
train = np.concatenate([target[:30], np.flatnonzero(data.domain > 0)])  # 30 target rows + every source row
test = target[30:]
alone = AdaBoostClassifier(rounds=50).fit(data.X[target[:30]], data.y[target[:30]])
msdtra = MSDTrAClassifier(rounds=50).fit(data.X[train], data.y[train], domain=data.domain[train])
print(f"target rows alone: AdaBoost error {1 - alone.score(data.X[test], data.y[test]):.3f}")
print(f"with the sources:  MSDTrA error   {1 - msdtra.score(data.X[test], data.y[test]):.3f}  "
      f"({msdtra.summary_.get('source_trust', {}).get('chosen', 'algorithm')})")

"""Online: a pixel stream learnt batch by batch with partial_fit, each example predicted before it is learnt.

    python examples/online.py
"""
import numpy as np
from sklearn.datasets import load_digits

from mpiboost.sklearn import OnlineAgnosticClassifier

X, y = load_digits(return_X_y=True)
order = np.random.default_rng(0).permutation(len(y))
X, y = X[order], y[order]
booster = OnlineAgnosticClassifier(seed=1)  # multinomial naive-Bayes leaves: the pixels look like counts
right = 0
for a in range(0, len(y), 200):
    if a:  # prequential: score the batch with the model so far, then learn it
        right += int((booster.predict(X[a:a + 200]) == y[a:a + 200]).sum())
    booster.partial_fit(X[a:a + 200], y[a:a + 200], classes=np.arange(10))
print(f"accuracy on each batch before learning it: {right / (len(y) - 200):.3f} "
      f"(weak learners: {booster.model_.learner['kind']})")

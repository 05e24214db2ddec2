"""Multiclass: SAMME with trees and softmax boosting on the 8x8 digits, cross-validated like any estimator.

    python examples/multiclass.py
"""
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, cross_val_score

from mpiboost.sklearn import SAMMEClassifier, SoftmaxClassifier

X, y = load_digits(return_X_y=True)
for est in (SAMMEClassifier(rounds=60, weak_learner="tree", max_leaves=15), SoftmaxClassifier(rounds=60)):
    scores = cross_val_score(est, X, y, cv=3)
    print(f"{type(est).__name__:18s} 3-fold accuracy {scores.mean():.3f}")
grid = GridSearchCV(SoftmaxClassifier(rounds=30), {"learning_rate": [0.1, 0.3]}, cv=3).fit(X, y)
print("best learning rate", grid.best_params_["learning_rate"], f"accuracy {grid.best_score_:.3f}")

"""Many small related tasks: Itakura-Saito multi-task boosting against one model per task, by mean AUC.

    python examples/multitask.py
"""
import numpy as np
from sklearn.metrics import roc_auc_score

from mpiboost.data import synth
from mpiboost.sklearn import AdaBoostClassifier, ISMultitaskClassifier

data = synth.module("manytasks").generate(300, seed=1, tasks=12)
test = synth.module("manytasks").generate(300, seed=2, tasks=12)
multi = ISMultitaskClassifier(rounds=120).fit(data.X, data.y, domain=data.domain)
score = multi.decision_function(test.X, domain=test.domain)
auc_multi, auc_alone = [], []
for k in range(12):
    tr, te = data.domain == k, test.domain == k
    if len(np.unique(test.y[te])) < 2 or len(np.unique(data.y[tr])) < 2:
        continue
    alone = AdaBoostClassifier(rounds=120).fit(data.X[tr], data.y[tr])
    auc_alone.append(roc_auc_score(test.y[te], alone.decision_function(test.X[te])))
    auc_multi.append(roc_auc_score(test.y[te], score[te]))
print(f"mean AUC over {len(auc_multi)} tasks: each task alone {np.mean(auc_alone):.3f}   "
      f"IS multi-task {np.mean(auc_multi):.3f}")

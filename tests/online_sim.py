"""The online driver on simulated ranks, in one process: what the block-online tests compare."""
import numpy as np

from mpiboost.online import ONLINE, driver


def simulate(X, y, values, k, algorithm, params, seed, B, size):
    """The driver on ``size`` simulated ranks (in turn, in this process): the first rank's state and the learners."""
    states = [driver.start(ONLINE[algorithm](k, params, seed), values, rank=r, size=size, n=len(y), seed=seed,
                           keep_predictions=True) for r in range(size)]
    for t0, Xb, yb in driver.blocks_of(X, y, B):
        labels = driver.join_labels([driver.predict_block(s, Xb) for s in states], states[0].booster.n_learners)
        for s in states:
            driver.finish_block(s, Xb, yb, t0, labels)
    for s in states[1:]:
        assert s.predictions == states[0].predictions and s.counts == states[0].counts
        for name, value in states[0].booster.get_state().items():
            np.testing.assert_array_equal(s.booster.get_state()[name], value, err_msg=name)
    banks = [s.bank.get_state() for s in states if s.bank is not None]
    return states[0], {name: np.concatenate([b[name] for b in banks]) for name in banks[0]}

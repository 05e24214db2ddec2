"""scikit-learn estimators, one per algorithm of the registry, made from its declarations.

::

    from mpiboost.sklearn import SmoothBoostClassifier
    clf = SmoothBoostClassifier(rounds=200, epsilon=0.1).fit(X, y)
    clf.predict(X_test)

Each batch algorithm of :data:`mpiboost.boost.ALGORITHMS` gives a class here, named after
its class (``SmoothBoostClassifier``, ``AdaBoostClassifier``, ``SAMMEClassifier``,
``MultiBoostClassifier``, ``MSDTrAClassifier``, ``ISMultitaskClassifier``, ...): its
constructor takes the algorithm's parameters under their declared names (``epsilon``,
``weak_learner``, ``max_leaves``, ...; ``mpiboost train --algo NAME --help`` lists them)
with the same defaults, plus the run's own: ``rounds`` (100), ``seed``, ``valid_fraction``,
``valid_metric``, ``best_round``, ``early_stop``, ``threads``, ``dedicated_coordinator``,
``domain_column`` and ``comm``. Nothing is checked in the constructor (scikit-learn's rule);
``fit`` checks everything before any work and raises ``ValueError`` naming the parameter.

Domains, sources and tasks
    ``fit(X, y, domain=...)`` takes each row's domain (MultiBoost), source (transfer: 0 is the
    target, 1, 2, ... the sources) or task (multi-task) id; without it every row is in domain 0
    (a transfer estimator then trains on the target alone). ``domain_column`` (a column index,
    or a DataFrame column name) reads the ids from a column of ``X`` instead, at ``fit`` and at
    ``predict``: the form that ``Pipeline``, ``GridSearchCV`` and ``cross_val_score`` can split.

Under ``mpiexec`` (SPMD)
    ``mpiexec -n 4 python script.py``: every rank builds the same estimator and calls ``fit``
    with its own rows (any sizes; a rank may have none); every rank gets the same fitted model,
    byte for byte the model ``mpiboost train`` makes from the ranks' rows concatenated in rank
    order. ``comm`` (an mpi4py communicator) picks the ranks; default, the whole job.
    ``predict`` and ``score`` work on each rank's own rows, without communication.

Probabilities
    Every classifier has ``predict_proba``. Where the fitted model has a link (the logistic loss,
    ``loss="logistic"``; ``GBDTClassifier``, ``SoftmaxClassifier``) they are calibrated as the log-loss
    fits them. An AdaBoost-style vote's are read off the vote: ``sigmoid(2 F)`` for a weighted binary vote
    (the exponential loss's link), ``softmax(F / (K - 1))`` for SAMME's class vote, the members' vote share
    for a majority vote; they rank rows, but are not calibrated.
"""
from __future__ import annotations

import inspect
import warnings
from typing import Any, Optional

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import boost
from .errors import InputError

# The run's own settings (the train command's options that are not an algorithm's), with the estimators'
# defaults: 100 rounds, where the command line makes --rounds required.
RUN_PARAMS = (
    ("rounds", 100, "int", "boosting rounds T"),
    ("seed", 0, "int", "seed of every random choice (the same model for the same seed on any number of ranks)"),
    ("valid_fraction", None, "float or None", "hold out this fraction of the training rows to pick the best "
                                              "round or an 'auto' value"),
    ("valid_metric", "error", "str", "validation metric: error, logloss, or auc"),
    ("best_round", False, "bool", "keep the rounds up to the best validation round"),
    ("early_stop", None, "int or None", "stop after this many rounds without a better validation metric"),
    ("threads", None, "int or None", "OpenMP threads per rank (default: the cores of the node over its ranks)"),
    ("dedicated_coordinator", False, "bool", "rank 0 coordinates and holds no rows"),
)
ONLINE_RUN_PARAMS = (
    ("seed", 0, "int", "seed of the randomised predictions and of the boosters' draws"),
    ("comm", None, "mpi4py communicator or None", "the ranks that share the weak learners (default: the whole job)"),
)
EXTRA_PARAMS = (
    ("domain_column", None, "int, str or None", "the column of X holding each row's domain / source / task id "
                                                "(taken out of the features), at fit and predict"),
    ("comm", None, "mpi4py communicator or None", "the ranks that train together (default: the whole job)"),
)


def _validate(est, X, reset: bool, y=None, min_samples: int = 1, y_numeric: bool = False):
    """X (and y) checked the scikit-learn way; sets n_features_in_ / feature_names_in_ when ``reset``."""
    kw = dict(accept_sparse="csr", dtype="numeric", ensure_min_samples=min_samples)
    try:
        from sklearn.utils.validation import validate_data  # scikit-learn >= 1.6
    except ImportError:  # pragma: no cover - older scikit-learn
        def validate_data(e, *a, **k):
            k["force_all_finite"] = k.pop("ensure_all_finite")
            return e._validate_data(*a, **k)
    kw["ensure_all_finite"] = "allow-nan"
    if y is None:
        return validate_data(est, X, reset=reset, **kw)
    return validate_data(est, X, y, reset=reset, y_numeric=y_numeric, multi_output=False, **kw)


def _numeric(X):
    """Boolean values as float64; complex ones refused."""
    if hasattr(X, "tocsr"):
        return X
    X = np.asarray(X)
    if X.dtype.kind in "iuf":
        return X
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    return X.astype(np.float64)  # booleans (object values were made numbers by the validation)


class _Estimator(BaseEstimator):
    """What the classifiers and the regressor share: the algorithm, the params, the ranks, the rows."""

    _algo: str = ""

    # ------------------------------------------------------------------ helpers
    @classmethod
    def _algorithm(cls):
        return boost.get(cls._algo)

    def _comm(self):
        from .api import _comm

        try:
            return _comm(self.comm)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    def _params(self) -> dict:
        """The mpiboost.train params of this estimator: the run's settings and the parameters set off their default."""
        out = {"algo": self._algo}
        for name, _, _, _ in RUN_PARAMS:
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        for p in self._algorithm().parameters:
            if not p.cli:
                continue
            v = getattr(self, p.name)
            if v is None:
                continue
            same = v == p.default if not isinstance(v, (list, tuple, np.ndarray)) else list(v) == p.default
            if not (isinstance(same, (bool, np.bool_)) and same):
                out[p.name] = v
        return out

    def _split_domain(self, X, domain, names: Optional[list]):
        """``(X without the domain column, domain, feature names)`` where ``domain_column`` is set."""
        col = self.domain_column
        if col is None:
            return X, domain, names
        if domain is not None:
            raise ValueError("give the domain ids either as domain= or in domain_column, not both")
        if isinstance(col, str):
            if names is None or col not in names:
                raise ValueError(f"domain_column {col!r}: X has no column of that name")
            col = names.index(col)
        if isinstance(col, bool) or not isinstance(col, (int, np.integer)):
            raise ValueError(f"domain_column must be a column index or name, got {col!r}")
        d = X.shape[1]
        if not -d <= col < d:
            raise ValueError(f"domain_column {col}: X has {d} columns")
        col = int(col) % d
        keep = [j for j in range(d) if j != col]
        dom = X[:, col]
        dom = dom.toarray().ravel() if hasattr(dom, "toarray") else np.asarray(dom).ravel()
        if np.isnan(dom.astype(np.float64)).any() or (dom != np.round(dom.astype(np.float64))).any():
            raise ValueError(f"domain_column {col}: the ids must be whole numbers")
        return X[:, keep], dom.astype(np.int64), (None if names is None else [names[j] for j in keep])

    def _agreed(self, comm, fn):
        """``fn()`` on every rank; an error on any rank is a ValueError on all (the original one on a single rank)."""
        err = None
        try:
            out = fn()
        except (ValueError, TypeError) as exc:
            if comm.size == 1:
                raise
            err, out = exc, None
        try:
            comm.check(err is None, str(err) if err is not None else "")
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return out

    # ------------------------------------------------------------------ predict
    def _rows(self, X, domain):
        check_is_fitted(self, "model_")
        from .data import frames

        Xc = _validate(self, frames.apply(X, getattr(self, "categories_", None)), False)
        names = list(getattr(self, "feature_names_in_", [])) or None
        Xc, dom, _ = self._split_domain(_numeric(Xc), domain, names)
        return Xc, dom

    def _call(self, method: str, X, domain):
        Xc, dom = self._rows(X, domain)
        try:
            return getattr(self.model_, method)(Xc, dom)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    @property
    def feature_importances_(self) -> np.ndarray:
        """Split counts per input column, normalised to sum 1 (0 for the domain column); zeros if no split."""
        check_is_fitted(self, "model_")
        imp = self.model_.feature_importances("split")
        if self.domain_column is not None:
            col = self.domain_column
            if isinstance(col, str):
                col = list(self.feature_names_in_).index(col)
            imp = np.insert(imp, int(col) % self.n_features_in_, 0.0)
        total = imp.sum()
        return imp / total if total > 0 else imp

    def save(self, path) -> None:
        """Write the fitted model (``mpiboost predict --model``, ``mpiboost.load``)."""
        check_is_fitted(self, "model_")
        self.model_.save(path)


class MpiboostClassifier(ClassifierMixin, _Estimator):
    """Base of the generated estimators (one subclass per algorithm; see the module docstring).

    Used itself, ``MpiboostClassifier(**params)`` is the default algorithm's estimator,
    :data:`DEFAULT_ALGORITHM` (gradient boosted trees: ``GBDTClassifier``'s parameters).
    """

    # ---------------------------------------------------------------------- fit
    def fit(self, X, y=None, domain=None, eval_set=None):
        """Collective: train on this rank's rows (see :meth:`_fit`)."""
        return self._fit(X, y, domain, eval_set, None)

    def _fit(self, X, y=None, domain=None, eval_set=None, sample_weight=None):
        """Collective: train on this rank's rows.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            This rank's rows (NaN is a missing value). A DataFrame's column names become ``feature_names_in_``.
        y : array-like of shape (n_samples,)
            Labels, any values (numbers or strings).
        domain : array-like of shape (n_samples,), optional
            Each row's domain / source / task id (see the module docstring); or use ``domain_column``.
        eval_set : list of one (X_valid, y_valid) pair, optional
            This rank's validation rows, as LightGBM's ``fit(eval_set=...)``: they pick the best round
            (``best_round``), stop training (``early_stop``) and choose ``auto`` values, instead of
            ``valid_fraction`` held-out training rows. With ``domain_column``, X_valid holds that column too.
        sample_weight : array-like of shape (n_samples,), optional
            Each row's weight (finite, >= 0), for the algorithms that take them (their ``fit`` has it).

        Returns
        -------
        self
        """
        from . import api

        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        from .boost.losses import REGRESSION

        if getattr(self, "objective", None) in REGRESSION:
            raise ValueError(f"objective={self.objective!r} fits numeric targets: use MpiboostRegressor")
        comm = self._comm()
        from .data import frames

        X, self.categories_ = frames.encode(comm, X)  # a DataFrame's categorical columns: codes, agreed
        if eval_set is not None:
            pairs = list(eval_set) if isinstance(eval_set, (list, tuple)) else None
            if not pairs or len(pairs) != 1 or not isinstance(pairs[0], (list, tuple)) or len(pairs[0]) != 2:
                raise ValueError("eval_set must be a list of one (X_valid, y_valid) pair: the rows that choose the "
                                 "round (several validation sets are not supported)")
            if self.valid_fraction is not None:
                raise ValueError("eval_set and valid_fraction both choose the validation rows: give one")
            Xv_raw, yv_raw = pairs[0][0], pairs[0][1]
            Xv_raw = frames.apply(Xv_raw, self.categories_)

        def check_valid(names):
            Xv = _numeric(_validate(self, Xv_raw, False))
            yv = np.asarray(yv_raw).ravel()
            if yv.shape[0] != Xv.shape[0]:
                raise ValueError(f"eval_set: {yv.shape[0]} labels for {Xv.shape[0]} rows")
            Xv, dv, _ = self._split_domain(Xv, None, names)
            return (Xv, yv) if dv is None else (Xv, yv, np.asarray(dv).ravel())

        def check():
            Xc, yc = _validate(self, X, True, y, min_samples=1 if comm.size == 1 else 0)
            check_classification_targets(yc)
            if "multiclass" not in self._algorithm().tasks:
                kind = type_of_target(yc, input_name="y")
                if kind not in ("binary",) and len(np.unique(yc)) > 2:
                    raise ValueError(f"Only binary classification is supported ({self._algo}). The type of the "
                                     f"target is {kind}.")
            names = list(getattr(self, "feature_names_in_", [])) or None
            Xc, dom, names = self._split_domain(_numeric(Xc), domain, names)
            if dom is not None:
                dom = np.asarray(dom).ravel()
                if dom.shape[0] != Xc.shape[0]:
                    raise ValueError(f"domain: {dom.shape[0]} ids for {Xc.shape[0]} rows")
            valid = check_valid(list(getattr(self, "feature_names_in_", [])) or None) if eval_set is not None else None
            weight = None
            if sample_weight is not None:
                weight = _check_sample_weight(sample_weight, Xc, ensure_non_negative=True)
            return Xc, np.asarray(yc), dom, names, valid, weight

        Xc, yc, dom, names, valid, weight = self._agreed(comm, check)
        params = self._params()
        if self._algorithm().needs_target:  # a transfer algorithm (not AdaBoost trained on one domain)
            params = self._without_sources(comm, params, dom)
        try:
            model = api.train(params, Xc, yc, dom, feature_names=names, comm=comm, valid=valid, weight=weight,
                              categorical_feature=_categorical_feature(self.categories_, names))
        except InputError as exc:  # agreed on every rank (the API's errors are collective)
            raise ValueError(str(exc)) from exc
        if self.categories_:
            model.info["categories"] = self.categories_  # the saved model maps a DataFrame's values by name too
        self.model_ = model
        self.classes_ = model.labels_of(np.arange(len(model.classes)))
        self.summary_ = getattr(model, "summary_", None)
        return self

    def _without_sources(self, comm, params: dict, dom) -> dict:
        """A transfer run given no source rows (no domain id > 0 on any rank) is AdaBoost on the target rows.

        That is what every transfer rule reduces to without a source; the algorithms themselves refuse such
        data (their command line needs ``--source``). The estimator says so with a warning and keeps the
        weak-learner settings that AdaBoost shares.
        """
        local = int(dom is not None and np.asarray(dom).size and (np.asarray(dom) != 0).any())
        if int(comm.allreduce_int(np.array([local], dtype=np.int64))[0]):
            return params
        warnings.warn(f"{type(self).__name__}: no source rows (domain ids > 0), so there is nothing to transfer: "
                      "fitting AdaBoost on the target rows alone", UserWarning, stacklevel=3)
        ada = boost.get("adaboost")
        return {"algo": "adaboost", **{k: v for k, v in params.items()
                                       if k != "algo" and (k in dict.fromkeys(n for n, *_ in RUN_PARAMS)
                                                           or ada.has(k))}}

    def predict(self, X, domain=None, pred_contrib: bool = False) -> np.ndarray:
        """The predicted label of every row (local: no communication).

        ``pred_contrib=True``: each feature's TreeSHAP contribution to the row's score instead, and the
        expected score last, as LightGBM's ``predict(X, pred_contrib=True)``
        (:meth:`mpiboost.model.Model.contributions`; tree models)."""
        if pred_contrib:
            try:
                return self._call("contributions", X, domain)
            except ValueError as exc:
                raise ValueError(str(exc)) from None
        return self._call("predict", X, domain)

    def decision_function(self, X, domain=None) -> np.ndarray:
        """Scores: shape (n,) for two classes (``classes_[1]`` where > 0), (n, K) for more (argmax).

        mpiboost breaks a tie towards the later class (a zero score predicts ``classes_[1]``); a tie is
        returned with that class one ulp ahead (for two classes, a score of exactly 0 as the smallest
        positive number), so that scikit-learn's ``decision > 0`` and ``argmax`` rules agree with
        :meth:`predict`.
        """
        score = self._call("decision_function", X, domain)
        if score.ndim == 2 and score.shape[1] == 2:  # a class-score model of two classes: their difference
            score = score[:, 1] - score[:, 0]
        if score.ndim == 1:
            return np.where(score == 0, np.nextafter(0.0, 1.0), score)
        from .model import ahead_on_ties

        return ahead_on_ties(score.copy())  # the class predict picks (the last of the tied) one ulp ahead

    def predict_proba(self, X, domain=None) -> np.ndarray:
        """Class probabilities (n, K) in the order of ``classes_``: calibrated where the model has a link (the
        logistic loss, gbdt, softmax), else read off the vote (module docstring)."""
        return self._call("predict_proba", X, domain)

    def predict_log_proba(self, X, domain=None) -> np.ndarray:
        """The log of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X, domain))

    # --------------------------------------------------------------------- tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = "multiclass" in self._algorithm().tasks
        return tags

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"allow_nan": True, "binary_only": "multiclass" not in self._algorithm().tasks}


class OnlineClassifier(MpiboostClassifier):
    """Base of the online boosters' estimators: ``fit`` is one prequential pass, ``partial_fit`` continues it.

    Used itself, ``OnlineClassifier(**params)`` is :data:`DEFAULT_ONLINE`'s estimator (Online MBBM, the
    strongest booster of the online results).

    ``fit(X, y)`` streams the rows (every rank's, in rank order) once, as ``mpiboost train`` streams a file;
    ``partial_fit(X, y, classes=...)`` feeds one batch more of the stream each call (``classes``: every label
    the stream will hold, needed at the first call unless the first batch holds them all). In a stream fed by
    ``partial_fit``, ``nominal`` ``auto`` means no nominal feature (a batch cannot show what a feature's
    later values will be) and ``weak_learner`` ``auto`` is decided by the first batch. With ``block_size`` 1
    the batches make the same pass as one ``fit`` over their concatenation.
    """

    @classmethod
    def _algorithm(cls):
        from .online import ONLINE

        return ONLINE[cls._algo]

    def _checked(self, comm, X, y, reset: bool):
        """(X, y) validated on every rank, an error on any rank raised on all."""
        def check():
            Xc, yc = _validate(self, X, reset, y, min_samples=1 if comm.size == 1 else 0)
            check_classification_targets(yc)
            return _numeric(Xc), np.asarray(yc)

        return self._agreed(comm, check)

    def _split(self) -> tuple[dict, dict]:
        """(the booster's parameters set off their default, the stream options given)."""
        from .online.options import STREAM_PARAMS

        own = {}
        for p in self._algorithm().parameters:
            v = getattr(self, p.name)
            if v is not None and not (v == p.default):
                own[p.name] = v
        stream = {p.name: getattr(self, p.name) for p in STREAM_PARAMS
                  if getattr(self, p.name) is not None and not (getattr(self, p.name) == p.default)}
        return own, stream

    def _params(self) -> dict:
        own, stream = self._split()
        return {"algo": self._algo, "seed": self.seed, **own, **stream}

    def fit(self, X, y=None):
        """Collective: one prequential pass over the rows (this rank's, after the lower ranks')."""
        from . import api

        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        comm = self._comm()
        Xc, yc = self._checked(comm, X, y, True)
        names = list(getattr(self, "feature_names_in_", [])) or None
        try:
            model = api.train(self._params(), Xc, yc, feature_names=names, comm=comm)
        except InputError as exc:
            raise ValueError(str(exc)) from exc
        self._set(model)
        self._stream = self._counts = None  # a later partial_fit continues from the model
        return self

    def _set(self, model) -> None:
        self.model_ = model
        self.classes_ = model.labels_of(np.arange(len(model.classes)))
        self.summary_ = getattr(model, "summary_", None)

    def partial_fit(self, X, y, classes=None):
        """Collective: feed this rank's rows of one more batch of the stream (see the class docstring)."""
        from .api import stream_rows
        from .data import labels as lab
        from .driver import online as online_driver
        from .online import learners

        comm = self._comm()
        first = not hasattr(self, "model_")
        Xc, yc = self._checked(comm, X, y, first)
        try:
            rows = stream_rows(comm, Xc, yc, list(getattr(self, "feature_names_in_", [])) or None)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        Xa = np.ascontiguousarray(rows.local["X"], dtype=np.float64)
        values = lab.as_array(rows.classes)[rows.local["y"]]
        own, given = self._split()
        try:
            opts = online_driver.stream_options(given)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        if first:
            known = lab.canonical(lab.plain(v) for v in (classes if classes is not None else rows.classes))
            if isinstance(opts["nominal_parsed"], list):
                raise ValueError("partial_fit streams without seeing the whole stream: give nominal='none' (or use "
                                 "fit, which scans the rows first)")
            learner = learners.resolve(opts["learner"], learners.counts_like(Xa))
            try:
                self._stream = online_driver.Stream(comm, self._algo, own, opts, self.seed, known, [0] * Xa.shape[1],
                                                    learner, list(getattr(self, "feature_names_in_", [])) or None)
            except (InputError, ValueError) as exc:
                raise ValueError(str(exc)) from None
        elif getattr(self, "_stream", None) is None:  # after fit or unpickling: continue from the model
            self._stream = online_driver.Stream.from_model(comm, self.model_, opts, getattr(self, "_counts", None))
        st = self._stream
        index = {c: i for i, c in enumerate(st.classes)}
        unknown = sorted({lab.plain(v) for v in values} - set(index), key=str)
        if unknown:
            raise ValueError(f"y holds label(s) {unknown[:3]} not among the classes {st.classes} (give every class "
                             "in classes= at the first partial_fit)")
        if st.learner["kind"] == "mnb" and (np.nan_to_num(Xa) < 0).any():
            raise ValueError("the weak learners model counts (mnb), but this batch holds negative values")
        st.feed(Xa, np.array([index[lab.plain(v)] for v in values], dtype=np.int64))
        self._set(st.model())
        return self

    def __getstate__(self):
        state = dict(self.__dict__)
        live = state.pop("_stream", None)  # the live learners (compiled banks); partial_fit rebuilds them from model_
        if live is not None:
            state["_counts"] = live.state.counts
        return state

    def _rows(self, X, domain):
        check_is_fitted(self, "model_")
        return _numeric(_validate(self, X, False)), None

    def decision_function(self, X, domain=None) -> np.ndarray:
        """The booster's distribution D: (n, k), or D[:, 1] - D[:, 0] for two classes (ties: ``classes_[0]``)."""
        D = self._call("decision_function", X, None)
        return D[:, 1] - D[:, 0] if D.shape[1] == 2 else D

    def predict_proba(self, X, domain=None) -> np.ndarray:
        """D (n, k): the probabilities of the booster's randomised prediction (a vote, not a calibrated posterior)."""
        return self._call("predict_proba", X, None)

    @property
    def feature_importances_(self):
        raise AttributeError("an online booster's naive-Bayes learners use every feature: no split importances")

    def save(self, path) -> None:
        """Write the fitted model (``mpiboost predict --model``, ``mpiboost.load``)."""
        check_is_fitted(self, "model_")
        self.model_.save(path)


def _type_name(p) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list of str"}[p.type] + \
        (" or 'auto'" if p.grid else "") + (" or None" if p.default is None else "")


def _docstring(cls, online: bool = False) -> str:
    from .online.options import STREAM_PARAMS

    what = ("Tasks: binary, multiclass; an online booster: ``fit`` is one prequential pass, ``partial_fit`` "
            "continues it (see :class:`OnlineClassifier`)." if online else
            f"Tasks: {', '.join(cls.tasks)}; weak learners: {', '.join(cls.weak_learners)}; losses: "
            f"{', '.join(cls.losses)}. See :mod:`mpiboost.sklearn` for domains, SPMD use and probabilities.")
    lines = [f"{cls.summary[:1].upper()}{cls.summary[1:]} (``--algo {cls.name}``) as a scikit-learn classifier.", "",
             what, "", "Parameters", "----------"]
    for p in tuple(cls.parameters) + (STREAM_PARAMS if online else ()):
        if p.cli:
            rng = p.range_text()
            lines += [f"{p.name} : {_type_name(p)}, default={p.default!r}",
                      f"    {p.help}{' (' + rng + ')' if rng else ''}. Option ``{p.flag}``."]
    for name, default, kind, text in (ONLINE_RUN_PARAMS if online else RUN_PARAMS + EXTRA_PARAMS):
        lines += [f"{name} : {kind}, default={default!r}", f"    {text[:1].upper()}{text[1:]}."]
    lines += ["", "Attributes", "----------",
              "model_ : mpiboost.model.Model", "    The fitted model (``save``, ``to_json``).",
              "classes_ : ndarray", "    The class labels.",
              "n_features_in_ : int", "    Columns of X at fit.",
              "feature_names_in_ : ndarray of str", "    The columns' names (a DataFrame's).",
              "feature_importances_ : ndarray", "    Split counts per column, normalised.",
              "summary_ : dict", "    The run's summary (rounds, times, bytes sent)."]
    return "\n".join(lines)


def _constructor(fields: list, name: str):
    """An estimator's ``__init__`` taking ``fields`` ((name, default) pairs) as keyword-only parameters."""

    def __init__(self, **kwargs):
        unknown = set(kwargs) - {n for n, _ in fields}
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter {sorted(unknown)[0]!r}")
        for key, default in fields:
            setattr(self, key, kwargs.get(key, default))

    # scikit-learn reads the parameters from the signature: give it the declared ones, keyword-only
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=tuple(d) if isinstance(d, list) else d)
           for n, d in fields])
    __init__.__qualname__ = f"{name}.__init__"
    return __init__


def _make(cls, online: bool = False) -> type:
    """The estimator class of algorithm class ``cls``: __init__ with every declared parameter and the run's."""
    from .online.options import STREAM_PARAMS

    own = [(p.name, p.default) for p in tuple(cls.parameters) + (STREAM_PARAMS if online else ()) if p.cli]
    run = [(name, default) for name, default, _, _ in (ONLINE_RUN_PARAMS if online else RUN_PARAMS + EXTRA_PARAMS)]
    clash = {n for n, _ in own} & {n for n, _ in run}
    if clash:
        raise TypeError(f"{cls.name}: parameter {sorted(clash)[0]} is also a run setting")
    name = cls.__name__ + "Classifier"
    __init__ = _constructor(own + run, name)
    base = OnlineClassifier if online else MpiboostClassifier
    body = {"_algo": cls.name, "__init__": __init__, "__doc__": _docstring(cls, online), "__module__": __name__}
    if not online:  # each its own fit: with sample_weight where the algorithm takes weights
        body["fit"] = _fit_weighted if cls.weight_rule else MpiboostClassifier.__dict__["fit"]
    est = type(name, (base,), body)
    return est


def _categorical_feature(categories: Optional[dict], names) -> Optional[dict]:
    """A DataFrame's categorical columns (their codes made by ``frames.encode``) as the API's
    ``categorical_feature``: ``{name: number of categories}`` for those of at most 255 categories."""
    from .data.format import MAX_CATEGORIES

    if not categories or not names:
        return None
    out = {c: max(1, len(v)) for c, v in categories.items() if c in names and len(v) <= MAX_CATEGORIES}
    return out or None


def _fit_weighted(self, X, y=None, domain=None, eval_set=None, sample_weight=None):
    """Collective: train on this rank's rows, each weighing ``sample_weight`` (finite, >= 0; default 1).

    See :meth:`MpiboostClassifier._fit` for the other arguments. Integer weights give the model of the rows
    repeated (where the bins and ``min_data_in_leaf``, which counts rows, cannot tell them apart)."""
    return self._fit(X, y, domain, eval_set, sample_weight)


def _registry() -> dict:
    from .registry import algorithms

    return {name: _make(cls, online=cls.kind == "online") for name, cls in algorithms().items()}


ESTIMATORS = _registry()
globals().update({e.__name__: e for e in ESTIMATORS.values()})

# The bases used themselves: the default batch algorithm and the default online booster, with their parameters
DEFAULT_ALGORITHM, DEFAULT_ONLINE = "gbdt", "online-mbbm"
for _base, _name in ((MpiboostClassifier, DEFAULT_ALGORITHM), (OnlineClassifier, DEFAULT_ONLINE)):
    _base._algo = _name
    _base.__init__ = ESTIMATORS[_name].__init__
MpiboostClassifier.fit = _fit_weighted  # gbdt's: it takes sample weights (the subclasses set their own)


class MpiboostRegressor(RegressorMixin, _Estimator):
    """Gradient boosted trees of numeric targets (``--algo gbdt --objective regression``) as a scikit-learn
    regressor: ``objective`` is ``"regression"`` (squared error, the default), ``"regression_l1"``,
    ``"huber"`` or ``"quantile"`` (``alpha``: Huber's delta, the quantile); the other parameters are
    ``GBDTClassifier``'s. ``predict`` gives the values, ``score`` R^2; under ``mpiexec`` every rank fits
    on its own rows and gets the same model, as the classifiers."""

    _algo = "gbdt"

    def _params(self) -> dict:
        out = super()._params()
        if out.get("objective") not in ("huber", "quantile"):
            out.pop("alpha", None)  # scikit-learn's rule: a parameter the objective does not read is ignored
        return out

    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Collective: train on this rank's rows ``X`` and targets ``y`` (numbers), each row weighing
        ``sample_weight`` (finite, >= 0; default 1); ``eval_set``: [(X_valid, y_valid)], as the classifiers'."""
        from . import api
        from .boost.losses import REGRESSION

        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        if self.objective not in REGRESSION:
            raise ValueError(f"objective={self.objective!r}: a regressor fits one of {', '.join(REGRESSION)} "
                             "(classes: GBDTClassifier)")
        comm = self._comm()
        from .data import frames

        X, self.categories_ = frames.encode(comm, X)  # a DataFrame's categorical columns: codes, agreed

        def check():
            Xc, yc = _validate(self, X, True, y, min_samples=1 if comm.size == 1 else 0, y_numeric=True)
            Xc, _, names = self._split_domain(_numeric(Xc), None, list(getattr(self, "feature_names_in_", []))
                                              or None)
            weight = None if sample_weight is None else _check_sample_weight(sample_weight, Xc,
                                                                             ensure_non_negative=True)
            valid = None
            if eval_set is not None:
                pairs = list(eval_set) if isinstance(eval_set, (list, tuple)) else None
                if not pairs or len(pairs) != 1 or len(pairs[0]) != 2:
                    raise ValueError("eval_set must be a list of one (X_valid, y_valid) pair")
                Xv = _numeric(_validate(self, frames.apply(pairs[0][0], self.categories_), False))
                Xv, _, _ = self._split_domain(Xv, None, names)
                yv = np.asarray(pairs[0][1], dtype=np.float64).ravel()
                if yv.shape[0] != Xv.shape[0]:
                    raise ValueError(f"eval_set: {yv.shape[0]} targets for {Xv.shape[0]} rows")
                valid = (Xv, yv)
            return Xc, np.asarray(yc, dtype=np.float64), names, weight, valid

        Xc, yc, names, weight, valid = self._agreed(comm, check)
        try:
            self.model_ = api.train(self._params(), Xc, yc, feature_names=names, comm=comm, valid=valid,
                                    weight=weight, categorical_feature=_categorical_feature(self.categories_, names))
        except InputError as exc:
            raise ValueError(str(exc)) from exc
        if self.categories_:
            self.model_.info["categories"] = self.categories_
        self.summary_ = getattr(self.model_, "summary_", None)
        return self

    def predict(self, X, pred_contrib: bool = False) -> np.ndarray:
        """The predicted value of every row (local); ``pred_contrib=True``: the TreeSHAP contributions and
        the expected value last, as LightGBM's."""
        return self._call("contributions" if pred_contrib else "predict", X, None)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"allow_nan": True}


def _regressor_init() -> None:
    """MpiboostRegressor's constructor: gbdt's parameters (objective "regression" by default) and the run's."""
    cls = boost.get("gbdt")
    fields = [(p.name, "regression" if p.name == "objective" else p.default) for p in cls.parameters if p.cli]
    fields += [(name, default) for name, default, _, _ in RUN_PARAMS + EXTRA_PARAMS]
    MpiboostRegressor.__init__ = _constructor(fields, "MpiboostRegressor")


_regressor_init()
GBDTRegressor = MpiboostRegressor  # the name beside GBDTClassifier


def estimator(algo: str, **params: Any) -> MpiboostClassifier:
    """The estimator of algorithm ``algo`` (a registry name, e.g. ``"samme"``) with ``params``."""
    try:
        return ESTIMATORS[algo](**params)
    except KeyError:
        raise ValueError(f"unknown algorithm {algo!r}; choose from {', '.join(sorted(ESTIMATORS))}") from None


__all__ = ["DEFAULT_ALGORITHM", "DEFAULT_ONLINE", "ESTIMATORS", "GBDTRegressor", "MpiboostClassifier", "MpiboostRegressor",
           "OnlineClassifier", "estimator"] + [e.__name__ for e in ESTIMATORS.values()]

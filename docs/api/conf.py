"""Sphinx configuration of mpiboost's API reference (built by tests/test_api_docs.py)."""
project = "mpiboost"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
numpydoc_show_class_members = False  # the estimators' members are documented on their base classes
autodoc_member_order = "bysource"
autodoc_typehints = "none"
exclude_patterns = ["_build", "estimators.rst"]  # estimators.rst is included in index.rst
html_theme = "alabaster"
html_static_path = []


def _estimators() -> None:
    """estimators.rst: one autoclass per estimator, from the registry (so a new algorithm is listed by itself)."""
    import os

    from mpiboost.sklearn import ESTIMATORS

    lines = []
    for est in ESTIMATORS.values():
        lines += [f".. autoclass:: mpiboost.sklearn.{est.__name__}", ""]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "estimators.rst")
    text = "\n".join(lines)
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


_estimators()

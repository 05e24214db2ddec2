"""Online boosters over a stream, one example at a time (:mod:`.base` is the contract).

:data:`ONLINE` is the registry of the online algorithms: the ``train``
options, the docs and the contract tests come from it. Adding one is a
module plus one line here.
"""
from .agnostic import OnlineAgnostic
from .mbbm import OnlineMBBM
from .ocor import OnlineOCOR
from .olm import OnlineOLM

ONLINE = {cls.name: cls for cls in (OnlineAgnostic, OnlineOCOR, OnlineMBBM, OnlineOLM)}

__all__ = ["ONLINE"]

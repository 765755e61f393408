"""Every CLI option says what it does in `--help`."""
from __future__ import annotations

import argparse

import pytest

from odcf.cli.main import build_parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _help(command: str, flag: str) -> str:
    for action in _subparsers()[command]._actions:
        if flag in action.option_strings:
            return action.help or ""
    raise AssertionError(f"odcf {command} has no {flag}")


def _options(name: str, parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):  # `odcf ontology check|list|...`
            for sub_name, sub in action.choices.items():
                yield from _options(f"{name} {sub_name}", sub)
        elif not isinstance(action, argparse._HelpAction):
            yield name, action


def test_every_option_of_every_command_has_a_help_text():
    # QA: `odcf batch --no-progress` had none (and train --epochs/--lr/--batch-size/--seed, export --threads)
    missing = [f"{name} {action.option_strings or action.dest}"
               for command, sub in _subparsers().items() for name, action in _options(command, sub)
               if len((action.help or "").strip()) < 10]
    assert missing == []


@pytest.mark.parametrize("command, flag, words", [
    ("batch", "--no-progress", ["never", "progress bar"]),
    ("compress", "--layer", ["default: fact", "instruction", "state"]),
    ("compress", "--instruction", ["not a file", "never compressed"]),
    ("compress", "--no-annotate", ["[source i/n]"]),
    ("batch", "--overwrite", ["OUTPUT", "unfinished run"]),
    ("batch", "--strict", ["errors.jsonl", "over budget"]),
    ("verify", "--base", ["relative source paths", "repeatable"]),
    ("verify", "--json", ['"problems"', "exit code"]),
    ("replay", "--json", ['"reproduced"', "exit code"]),
    ("analyze", "--plan", ["odcf plan --format json", "--ontology"]),
    ("analyze", "--layer", ["default: fact"]),
    *[(cmd, "--tokenizer", ["o200k_base", "bytes", "hf:PATH", "unit of the budget"])
      for cmd in ("compress", "batch", "analyze", "handoff")],
    *[(cmd, flag, ["stage", "repeatable", "e.g."]) for cmd in ("compress", "analyze", "handoff", "batch")
      for flag in ("--enable", "--disable")],
    ("analyze", "--enable", ["stages: rules, segment"]),
    ("handoff", "--disable", ["segment, budget, assemble cannot be switched off"]),
])
def test_the_options_qa_found_undocumented_say_what_they_do(command, flag, words):
    text = " ".join(_help(command, flag).split())
    for word in words:
        assert word in text, (command, flag, text)

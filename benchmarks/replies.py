#!/usr/bin/env python3
"""Replies that never guess: the attack corpus read by this checkout and by a baseline.

    python benchmarks/replies.py [--baseline PYTHON] [--show]

Reads every reply of ``tests/requests/attack_replies.json`` (ordinary questions, the
supervisor's Retry / Skip / Abort, approvals and reviews; each case with the reading SPEC
section 16 gives it) through ``loopkit.requests.answer.parse_for`` and counts, per parser:

- wrong decisions: a choice the human did not make (another option, or an approval, a
  rejection or a deferral the reply did not give);
- free text where a choice was clear: the rules name an option, the parser kept free text;
- words lost: the right choice, but the words after it (``B, this task is obsolete``) not
  kept as the note or reason.

``--baseline PYTHON`` is the interpreter of another checkout (for example one made with
``git worktree add /tmp/old 93b0469`` and a venv there with ``pip install -e /tmp/old``);
its own ``loopkit`` reads the same corpus in the same run. A loopkit whose ``Option`` has
no aliases gets the options without them. Prints one markdown table; ``--show`` lists
every reply read otherwise than the corpus says. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "requests" / "attack_replies.json"


def read_all(corpus: dict[str, Any]) -> list[dict[str, Any]]:
    """Each case's reading by the loopkit this interpreter imports (run in a child)."""
    from loopkit.requests.answer import parse_for
    from loopkit.requests.models import Option
    from loopkit.requests.record import Request

    def option(data: dict[str, Any]) -> Option:
        aliases = tuple(data.get("aliases", ()))
        try:
            return Option(data["label"], data["value"], aliases=aliases)  # type: ignore[call-arg]
        except TypeError:  # a loopkit from before aliases
            return Option(data["label"], data["value"])

    readings = []
    for case in corpus["cases"]:
        shape = corpus["shapes"][case["shape"]]
        record = Request(
            request_id="bench",
            prompt=shape["prompt"],
            kind=shape["kind"],
            options=[option(o) for o in shape["options"]],
            recommendation=shape.get("recommendation"),
        )
        # A P0 request (SPEC §28) carries its gate binding or ask's P0 verdict.
        record.gate, record.needs_human = shape.get("gate"), shape.get("needs_human")
        decision, extra = parse_for(record, case["reply"])
        free = decision.matched_by == "free_text"
        reading = decision.chosen_option if shape["kind"] == "question" else extra.get("outcome")
        words = extra.get("note") or extra.get("reason")
        readings.append({"reading": reading, "free": free, "words": words})
    return readings


def _norm(text: Any) -> str:
    return " ".join(str(text or "").split()).casefold()


def verdict(case: dict[str, Any], kind: str, got: dict[str, Any]) -> str:
    """ok | wrong | missed (free text where a choice was clear) | words lost."""
    expect, reading, free = case["expect"], got["reading"], got["free"]
    feedback = kind != "question" and free  # an approval's free text: changes requested
    if reading == expect:
        if case.get("note") and _norm(got["words"]) != _norm(case["note"]):
            return "words lost"
        return "ok"
    if reading is None or feedback:
        return "missed"
    return "wrong"


def run(python: str, *, here: bool) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if here:
        env["PYTHONPATH"] = str(ROOT)  # this checkout's loopkit, whatever is installed
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), "--worker", str(CORPUS)],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"replies.py: {python} failed:\n{done.stderr}")
    readings: list[dict[str, Any]] = json.loads(done.stdout)
    return readings


def where(python: str, *, here: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if here:
        env["PYTHONPATH"] = str(ROOT)
    code = "import loopkit, pathlib; print(pathlib.Path(loopkit.__file__).parents[1])"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    return done.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="PYTHON", help="another checkout's interpreter")
    parser.add_argument("--show", action="store_true", help="list every reply read otherwise")
    parser.add_argument("--worker", metavar="CORPUS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        corpus = json.loads(Path(args.worker).read_text("utf-8"))
        json.dump(read_all(corpus), sys.stdout)
        return
    corpus = json.loads(CORPUS.read_text("utf-8"))
    cases = corpus["cases"]
    parsers = []
    if args.baseline:
        parsers.append((f"baseline ({where(args.baseline, here=False)})", args.baseline, False))
    parsers.append((f"this checkout ({ROOT})", sys.executable, True))
    kinds = {c["shape"]: corpus["shapes"][c["shape"]]["kind"] for c in cases}
    print(f"{len(cases)} replies over {len(corpus['shapes'])} questions and approvals\n")
    print(
        "| parser | wrong decisions (a choice the human did not make) "
        "| free text where a choice was clear | words lost "
        "| the issue's cases read otherwise | total |"
    )
    print("|---|---|---|---|---|---|")
    shown = []
    for name, python, here in parsers:
        readings = run(python, here=here)
        verdicts = [verdict(c, kinds[c["shape"]], r) for c, r in zip(cases, readings, strict=True)]
        issue = sum(
            1
            for c, v in zip(cases, verdicts, strict=True)
            if v != "ok" and c["about"].startswith("issue")
        )
        print(
            f"| {name} | {verdicts.count('wrong')} | {verdicts.count('missed')} "
            f"| {verdicts.count('words lost')} | {issue} | {len(cases)} |"
        )
        for case, reading, why in zip(cases, readings, verdicts, strict=True):
            if why != "ok":
                shown.append((name, case, reading, why))
    if args.show and shown:
        print("\n| parser | question | reply | expected | read as | verdict |")
        print("|---|---|---|---|---|---|")
        for name, case, got, why in shown:
            read = got["reading"] if not got["free"] or kinds[case["shape"]] != "question" else None
            words = f" ({got['words']!r})" if got["words"] else ""
            print(
                f"| {name.split(' (')[0]} | {case['shape']} | `{case['reply']}` "
                f"| {case['expect']} | {read}{words} | {why} |"
            )


if __name__ == "__main__":
    main()

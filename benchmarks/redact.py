#!/usr/bin/env python3
"""What redacting an agent's output costs: the iteration log's ``LineRedactor`` over a
synthetic output (test lines, log lines with URLs and times, code that names a key or a
token, prose), with this checkout's rules and with the rules before secrets were masked by
shape (SPEC §26: the Bot API token and the Slack webhook path alone), in the same run.

    python benchmarks/redact.py [--mb 12] [--repeat 3]

Prints one markdown table: megabytes per second and milliseconds per megabyte, best of
``--repeat``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import random
import re
import string
import time
from collections.abc import Callable

from loopkit.redact import _PATTERNS, LineRedactor, Redactor

BEFORE = _PATTERNS  # the token and webhook shapes: all that was masked by shape before


def output(megabytes: float) -> bytes:
    rng = random.Random(26)
    lines: list[str] = []
    size = 0
    while size < megabytes * 1e6:
        n = len(lines)
        kind = rng.random()
        if kind < 0.3:
            line = f"tests/test_prices.py::test_case_{n} PASSED [ {n % 100}%]"
        elif kind < 0.5:
            line = (
                f"2026-12-04T12:{n % 60:02d}:00Z INFO GET https://api.example.com/v1/items/{n} 12ms"
            )
        elif kind < 0.6:
            line = f"    assert compute(key='abc', token_count={n}) == 42  # the token is fine"
        else:
            line = "".join(rng.choices(string.ascii_letters + " ", k=60))
        lines.append(line)
        size += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def rate(data: bytes, text: Callable[[str], str], repeat: int) -> float:
    """Seconds for ``data`` through a LineRedactor whose redaction is ``text``, best of
    ``repeat``."""

    class Rules(Redactor):
        def text(self, value: str) -> str:
            return text(value)

    best = float("inf")
    for _ in range(repeat):
        sink: list[bytes] = []
        stream = LineRedactor(sink.append, Rules())
        start = time.perf_counter()
        for at in range(0, len(data), 65536):  # as a command's output arrives
            stream.write(data[at : at + 65536])
        stream.flush()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=12.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = output(args.mb)
    megabytes = len(data) / 1e6

    def before(value: str) -> str:
        for pattern in BEFORE:
            value = re.sub(pattern, "***", value)
        return value

    print(f"{megabytes:.1f} MB of synthetic agent output, best of {args.repeat}\n")
    print("| rules | MB/s | ms per MB |\n|---|---:|---:|")
    for name, rules in (
        ("before (token, webhook)", before),
        ("by shape (SPEC §26)", Redactor().text),
    ):
        seconds = rate(data, rules, args.repeat)
        print(f"| {name} | {megabytes / seconds:.1f} | {1000 * seconds / megabytes:.0f} |")


if __name__ == "__main__":
    main()

"""A verify failure, read as its failing tests and their first error lines (SPEC §25).

Two runs of a test suite that fail the same way differ in everything around the failure: a
runner's diff of two values, a captured log, the summary's counts, the order of the tests.
So a failure is compared by what says *which* failure it is, read in this order:

1. The failing tests, as the runner names them: pytest's ``FAILED``/``ERROR`` summary lines,
   unittest's ``FAIL:``/``ERROR:``, ``go test``'s ``--- FAIL:``, cargo's ``test … FAILED``,
   jest's and vitest's ``✕``/``●``, rspec's ``rspec ./spec/…``, TAP's ``not ok``.
2. The output cut into sections where a failing test's report begins (pytest's ``____ name
   ____``, unittest's ``FAIL:``, go's ``--- FAIL:``, cargo's ``---- name stdout ----``,
   jest's ``●``; a ``====`` banner ends one). Each section's *first error line*: the first
   line that states an error (``E   …``, ``error[E0308]: …``, ``ValueError: …``, a panic),
   else the first line of the test's report. Output with no such section is one section,
   whose first error line is the first that states an error, else the first that reports
   one (``src/x.py:3:1: F401 …``, ``FAILED …``), else the first that mentions one.
3. The number failing: the last summary that counts them (``1 failed, 2 errors``, ``Found 3
   errors``, ``5 problems``, ``failures=1``), else the failing tests, else the findings
   (``path:line:col: CODE``) — so fewer failing tests is seen even when nothing else moved.

The identity (:attr:`Failure.key`) is the exit code, the failing tests and the first error
lines, each masked (:mod:`loopkit.supervisor.normalise`) and, in the error lines, the values
a check saw (``assert 1998 == 1999``, ``got 404``): the same check failing with another value
is the same failure. Test names, file names, messages and error codes (``TS2322``) are kept,
so a failure differing in any of them is another (a property test holds it).
"""

from __future__ import annotations

import hashlib
import re

from loopkit.datarecord import record
from loopkit.message import fold
from loopkit.supervisor.normalise import normalise

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# pytest's ===, ___ and !!! banners (a trailing *** is a redaction: kept)
_BANNER = re.compile(r"^[=\-_~! ]{3,}|[=\-_~! ]{3,}$")

# A failing test, as each runner names it: (pattern, the group that names it).
_FAILING = (
    (re.compile(r"^(?:FAILED|ERROR) ([^\s(][^\s]*?)(?: - .*)?$"), 1),  # pytest
    (re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)"), 0),  # unittest (joined below)
    (re.compile(r"^\s*--- FAIL: (\S+)"), 1),  # go test
    (re.compile(r"^test (\S+) \.\.\. FAILED$"), 1),  # cargo test
    (re.compile(r"^\s*[✕×✗] (.+?)(?: \(\d+(?:\.\d+)? ?m?s\))?$"), 1),  # jest, vitest
    (re.compile(r"^\s*● (?!Console)(.+)$"), 1),  # jest's report of one
    (re.compile(r"^rspec (\./\S+ # .+)$"), 1),  # rspec
    (re.compile(r"^not ok \d+\s*-?\s*(.+)$"), 1),  # TAP
)
# Where one failing test's report begins.
_SECTION = re.compile(
    r"^(?:_{3,} (?P<pytest>.+?) _{3,}|(?:FAIL|ERROR): \w+ \(|\s*--- FAIL: |---- \S+ std(?:out|err)"
    r" ----|\s*● (?!Console))"
)
_ENDS_SECTION = re.compile(r"^={3,}|^-{3,} Captured")
# Lines that state an error, then lines that report one (as the stuck detector reads them).
_STATES = re.compile(
    r"^(E\s+\S|error(\[\w+\])?:|.*\berror TS\d+|(\w+\.)*\w*(Error|Exception)(:|$)|.*panicked at"
    r"|thread '.+' panicked)"
)
_REPORTS = re.compile(r"^(\S+:\d+(:\d+)?:? [A-Z]+\d+|FAILED\b|ERROR\b|fatal:|Error:|FAIL\b)")
_FINDING = re.compile(r"^\S+:\d+(?::\d+)?:? [A-Z]+\d+")
_COUNT = re.compile(
    r"(\d+) (?:previous )?(failed|failures?|errors?|problems?)\b|\b(failures|errors)=(\d+)"
)
NO_OUTPUT = "(no output)"  # Failure.line when the output says nothing
_VALUE = re.compile(r"(?<![\w.<>-])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?![\w<>])")


@record(frozen=True, slots=True)
class Failure:
    """One failing verify, read: what says which failure it is, and what a human is shown."""

    tests: tuple[str, ...]  # the failing tests, as printed, in order
    lines: tuple[str, ...]  # each section's first error line, masked: the identity's part
    count: int | None  # how many fail (None: the output does not say)
    test: str | None  # the first failing test, as printed
    line: str  # its (or the output's) first error line, as printed: the question's
    key: str  # the identity: exit code, failing tests and first error lines, masked

    @property
    def said(self) -> str:
        """The first error line without what repeats the test or marks the line: pytest's
        ``FAILED <test> - `` and ``E ``."""
        line = self.line
        for prefix in (f"FAILED {self.test} - ", f"ERROR {self.test} - ", "E "):
            if (self.test is not None or prefix == "E ") and line.startswith(prefix):
                line = line[len(prefix) :].strip()
        return "" if line in (f"FAILED {self.test}", f"ERROR {self.test}") else line

    @property
    def brief(self) -> str:
        """The failing test (its file's name, not its folders) and its first error line:
        ``test_api.py::test_create_order: assert 404 == 201`` — the question's fact."""
        if not self.test:
            return self.said
        name = self.test.rsplit("/", 1)[-1] if "::" in self.test else self.test
        return f"{name}: {self.said}" if self.said else name


def read(output: str, exit_code: int = 1) -> Failure:
    """``output`` of a verify that exited ``exit_code``, read as the module docstring says."""
    text = _ANSI.sub("", output.replace("\r\n", "\n"))
    lines = text.splitlines()
    tests = _failing_tests(lines)
    sections = _sections(lines)
    firsts = [line for line in (_first_error(section, headed) for section, headed in sections)
              if line]  # fmt: skip
    if not firsts:
        whole = _first_error(lines, False)
        firsts = [whole] if whole else []
    masked = sorted({_mask_values(normalise(line)) for line in firsts})
    names = sorted({normalise(test) for test in tests})
    digest = hashlib.sha256(
        "\0".join([str(exit_code), "\n".join(names), "\n".join(masked)]).encode()
    ).hexdigest()[:16]
    shown = fold(" ".join(firsts[0].split()), 200) if firsts else NO_OUTPUT
    return Failure(
        tests=tuple(tests),
        lines=tuple(masked),
        count=_count(lines, tests),
        test=tests[0] if tests else None,
        line=shown,
        key=digest,
    )


def _failing_tests(lines: list[str]) -> list[str]:
    found: dict[str, None] = {}
    for line in lines:
        for pattern, group in _FAILING:
            match = pattern.match(line.rstrip())
            if match is None:
                continue
            if group == 0:  # unittest: "test_x (module.Class.test_x)" or "(module.Class)"
                name, where = match.group(1), match.group(2)
                test = where if where.endswith("." + name) else f"{where}.{name}"
            else:
                test = match.group(group).strip()
            found.setdefault(test)
            break
    return list(found)


def _sections(lines: list[str]) -> list[tuple[list[str], bool]]:
    """The output cut where a failing test's report begins: (lines, begun by a test's
    header), the header line first."""
    sections: list[tuple[list[str], bool]] = []
    current: list[str] = []
    headed = False
    for line in lines:
        if _SECTION.match(line):
            if headed:
                sections.append((current, True))
            current, headed = [line], True
        elif _ENDS_SECTION.match(line) and headed:
            sections.append((current, True))
            current, headed = [], False
        else:
            current.append(line)
    if headed:
        sections.append((current, True))
    return sections


def _first_error(lines: list[str], headed: bool) -> str | None:
    """The first line stating an error, else reporting one, else (a test's report) its first
    line after the header."""
    body = lines[1:] if headed else lines
    cleaned = [_BANNER.sub("", line).strip() for line in body]
    cleaned = [line for line in cleaned if line]
    for pattern in (_STATES,) if headed else (_STATES, _REPORTS):
        for line in cleaned:
            if pattern.match(line):
                return line
    if headed:
        return next((line for line in cleaned if not line.startswith("Traceback")), None)
    errorish = [line for line in cleaned if re.search(r"(?i)error|fail|exception|panic", line)]
    chosen = errorish or cleaned[-1:]
    return chosen[0] if chosen else None


def _count(lines: list[str], tests: list[str]) -> int | None:
    for line in reversed(lines[-20:]):
        kinds: dict[str, int] = {}
        for match in _COUNT.finditer(line):
            number = match.group(1) or match.group(4)
            kind = (match.group(2) or match.group(3)).rstrip("s").replace("failure", "failed")
            kinds.setdefault(kind, int(number))
        if kinds:
            if "problem" in kinds:
                return kinds["problem"]
            return sum(kinds.values())
    if tests:
        return len(tests)
    findings = {line for line in lines if _FINDING.match(line)}
    return len(findings) or None


def _mask_values(line: str) -> str:
    return _VALUE.sub("<n>", line)

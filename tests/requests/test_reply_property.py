"""SPEC §16's property: the decision is the option the human named, or free text — never
another option. Hypothesis builds questions (labels of words, some with numbers) and replies
made from their labels the way a reply goes wrong: a digit changed, a negation added,
another option's letter prepended, two labels joined, a ``?`` appended, a typo."""

from __future__ import annotations

import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.requests.answer import APPROVAL_OPTIONS, REVIEW_OPTIONS, parse_for
from loopkit.requests.models import Option
from loopkit.requests.record import Request
from loopkit.requests.replies import parse_reply

WORDS = [
    "deploy", "rollback", "migrate", "postgres", "mysql", "staging", "canary", "release",
    "branch", "rebase", "squash", "cache", "worker", "replicas", "nodes", "schema", "ignore",
    "publish", "archive", "restart", "upgrade", "freeze", "feature", "legacy", "client",
    "server", "backup", "mirror", "tests", "build", "keep", "remove", "merge", "wait",
    "retry", "skip", "abort", "use", "stay", "run", "now", "tonight", "api", "endpoint",
]  # fmt: skip
NEGATIONS = [
    "not {}", "no {}", "don't {}", "do not {}", "never {}", "without {}", "dont {}",
    "{} not", "un{}", "dis{}", "{} instead of {other}", "{} rather than {other}",
]  # fmt: skip
JOINS = ["{} and {}", "{} or {}", "{}, {}", "{} / {}", "{} or {}?", "{}, no wait, {}"]
SEPARATORS = [" - ", ", ", ": ", ") ", " — ", "; "]
# One neighbour for each key of a QWERTY keyboard (q → w, a → s, …).
NEIGHBOURS = dict(zip("qwertyuiopasdfghjklzxcvbnm", "wertyuioposdfghjklkxcvbnmn", strict=True))


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or label


@st.composite
def labels(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        number = str(draw(st.integers(1, 99)))
        token = draw(st.sampled_from([number, f"v{number}"]))
        words.insert(draw(st.integers(0, len(words))), token)
    first, *rest = words
    return " ".join([first.capitalize(), *rest])


@st.composite
def questions(draw: st.DrawFn) -> list[Option]:
    texts = draw(st.lists(labels(), min_size=2, max_size=3, unique_by=normalise))
    return [Option(text, slug(text)) for text in texts]


def named(reply: str, options: list[Option]) -> set[str | None]:
    """What a reply may be read as besides free text: an option it is the label, value or
    start of a label of (a mutation can land on another option's own text)."""
    key = normalise(reply)
    found: set[str | None] = {None}
    for option in options:
        label = normalise(option.label)
        if key in (label, option.value) or (len(key) > 1 and label.startswith(key)):
            found.add(option.value)
    return found


def read(reply: str, options: list[Option]) -> str | None:
    return parse_reply(reply, options).chosen_option


def test_a_digit_slip_beside_another_options_typo_is_free_text() -> None:
    """Hypothesis found it: "21 deploy" is a digit off "20 deploy" and a letter off "V21
    deploy" — a typo of neither."""
    options = [Option("20 deploy", "20-deploy"), Option("V21 deploy", "v21-deploy")]
    assert read("21 deploy", options) is None
    assert read("v21 deplyo", options) == "v21-deploy"


def test_a_space_dropped_beside_a_number_is_still_that_option() -> None:
    """A review found the first fix too wide: "node18" (a dropped space) is Node 18, though
    Node 20 is also a digit and a space away."""
    for reply, labels, meant in (
        ("node18", ["Node 18", "Node 20"], "node-18"),
        ("retry23", ["Retry 23", "Retry 33"], "retry-23"),
        ("keep10 workers", ["Keep 10 workers", "Keep 20 workers"], "keep-10-workers"),
        ("wait5 minutes", ["Wait 5 minutes", "Wait 9 minutes"], "wait-5-minutes"),
    ):
        assert read(reply, [Option(label, slug(label)) for label in labels]) == meant, reply


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_a_label_with_a_space_beside_its_number_dropped_is_that_option(
    options: list[Option], data: st.DataObject
) -> None:
    """The near miss of the rule above: a digit slip off one option is free text, but a
    dropped space ("node18" of "Node 18") is still that option — beside an option that
    differs from it only by its number ("Node 20"), the case a wider rule lost."""
    spaced = [o for o in options if re.search(r" \d|\d ", o.label)]
    if not spaced:
        return
    option = data.draw(st.sampled_from(spaced))
    number = re.search(r"\d+", option.label)
    assert number is not None
    other = str(data.draw(st.integers(1, 99).filter(lambda n: str(n) != number.group())))
    twin = option.label[: number.start()] + other + option.label[number.end() :]
    if all(normalise(twin) != normalise(o.label) for o in options):
        options = [*options, Option(twin, slug(twin))]
    gaps = [m.start() for m in re.finditer(r"(?<=\d) | (?=\d)", option.label)]
    at = data.draw(st.sampled_from(gaps))
    reply = option.label[:at] + option.label[at + 1 :]
    if sum(ch.isalnum() for ch in reply) < 5:
        return  # SPEC §28: a typo needs 5 letters or more ("1use" is free text)
    assert read(reply, options) == option.value, (reply, [o.label for o in options])


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_a_label_with_a_digit_changed_is_free_text(
    options: list[Option], data: st.DataObject
) -> None:
    numbered = [o for o in options if re.search(r"\d", o.label)]
    if not numbered:
        return
    option = data.draw(st.sampled_from(numbered))
    digits = [i for i, ch in enumerate(option.label) if ch.isdigit()]
    at = data.draw(st.sampled_from(digits))
    other = data.draw(st.sampled_from([d for d in string.digits if d != option.label[at]]))
    reply = option.label[:at] + other + option.label[at + 1 :]
    assert read(reply, options) in named(reply, options)


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_a_negated_label_is_never_that_option(options: list[Option], data: st.DataObject) -> None:
    option = data.draw(st.sampled_from(options))
    other = data.draw(st.sampled_from([o for o in options if o is not option]))
    form = data.draw(st.sampled_from(NEGATIONS))
    text = data.draw(st.sampled_from([option.label, option.label.lower(), option.value or ""]))
    reply = form.format(text, other=other.label)
    assert read(reply, options) in named(reply, options)


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_another_options_letter_before_a_label_is_free_text(
    options: list[Option], data: st.DataObject
) -> None:
    option = data.draw(st.sampled_from(options))
    letter = string.ascii_uppercase[
        data.draw(st.sampled_from([i for i, o in enumerate(options) if o is not option]))
    ]
    separator = data.draw(st.sampled_from(SEPARATORS))
    case = data.draw(st.sampled_from([str.upper, str.lower]))
    reply = f"{case(letter)}{separator}{option.label}"
    assert read(reply, options) is None


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_two_labels_joined_are_free_text(options: list[Option], data: st.DataObject) -> None:
    first, second = data.draw(st.permutations(options))[:2]
    form = data.draw(st.sampled_from(JOINS))
    reply = form.format(first.label, second.label)
    assert read(reply, options) in named(reply, options)


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_a_question_mark_makes_any_answer_free_text(
    options: list[Option], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(options) - 1))
    option = options[index]
    answer = data.draw(
        st.sampled_from([option.label, option.value or "", string.ascii_uppercase[index]])
    )
    reply = answer + data.draw(st.sampled_from(["?", " ?", "?!", "??"]))
    assert read(reply, options) is None


@st.composite
def typo(draw: st.DrawFn, text: str) -> str:
    """One slip at a letter: a key missed, doubled, two swapped, or a neighbour hit."""
    letters = [i for i, ch in enumerate(text) if ch.isalpha()]
    at = draw(st.sampled_from(letters))
    kind = draw(st.sampled_from(["miss", "double", "swap", "neighbour"]))
    if kind == "miss":
        return text[:at] + text[at + 1 :]
    if kind == "double":
        return text[:at] + text[at] + text[at:]
    if kind == "swap" and at + 1 < len(text):
        return text[:at] + text[at + 1] + text[at] + text[at + 2 :]
    near = NEIGHBOURS.get(text[at].lower(), text[at])
    return text[:at] + near + text[at + 1 :]


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_a_typo_in_a_label_is_that_option_or_free_text(
    options: list[Option], data: st.DataObject
) -> None:
    option = data.draw(st.sampled_from(options))
    reply = data.draw(typo(option.label))
    assert read(reply, options) in named(reply, options) | {option.value}


@settings(max_examples=200, deadline=None)
@given(questions(), st.data())
def test_the_label_or_the_letter_itself_is_that_option(
    options: list[Option], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(options) - 1))
    reply = data.draw(st.sampled_from([options[index].label, string.ascii_uppercase[index]]))
    assert read(reply, options) == options[index].value


YES = ["yes", "approve", "approved", "ok", "lgtm", "A", "Approve", "👍", "y"]
NOT_YES = [
    "{}?", "not {}", "don't {}", "un{}", "dis{}", "{} if tests pass", "{}, once CI is green",
    "{} but not today", "{}, no wait, reject", "{} or reject", "{} and reject", "B - {}",
    "{} unless it touches prod", "{} after the backup", "never {}", "{}, wait", "{} later",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["approval", "review"]),
    st.sampled_from(YES),
    st.sampled_from(NOT_YES),
    st.sampled_from([str, str.upper, str.capitalize]),
)
def test_an_approval_with_a_question_negation_condition_or_second_thoughts_never_approves(
    kind: str, yes: str, form: str, case: object
) -> None:
    options = list(APPROVAL_OPTIONS if kind == "approval" else REVIEW_OPTIONS)
    record = Request(request_id="r1", prompt="Run it?", kind=kind, options=options)  # type: ignore[arg-type]
    reply = case(form.format(yes))  # type: ignore[operator]
    decision, extra = parse_for(record, reply)
    assert extra["outcome"] != "approved", reply
    assert decision.chosen_option != "approved"


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=80),
    st.lists(
        st.builds(Option, st.text(max_size=30), st.one_of(st.none(), st.text(max_size=20)),
                  aliases=st.lists(st.text(max_size=10), max_size=3).map(tuple)),
        max_size=4,
    ),
    st.sampled_from(["question", "approval", "review"]),
)  # fmt: skip
def test_any_reply_to_any_options_is_read_without_raising(
    reply: str, options: list[Option], kind: str
) -> None:
    record = Request(request_id="r1", prompt="?", kind=kind, options=options)  # type: ignore[arg-type]
    decision, _ = parse_for(record, reply)
    if decision.chosen_option is None:
        assert decision.free_text == reply


@settings(max_examples=400, deadline=None)
@given(questions(), st.data())
def test_two_indexes_joined_are_free_text(options: list[Option], data: st.DataObject) -> None:
    """Two options named by their letters or numbers ("A, no wait, C", "2, or 3") are
    several options: free text, never the first one with the rest as its note."""
    first, second = data.draw(st.permutations(range(len(options))))[:2]
    by_number = data.draw(st.booleans())
    one, two = (
        (str(first + 1), str(second + 1))
        if by_number
        else (string.ascii_uppercase[first], string.ascii_uppercase[second])
    )
    # A letter names its option wherever it stands; a number only at the end of a clause or
    # after second thoughts ("keep 3 replicas" is a count, not option 3).
    forms = [*JOINS, "{}, actually {}"] + ([] if by_number else ["{} - {} is better"])
    form = data.draw(st.sampled_from(forms))
    assert read(form.format(one, two), options) is None

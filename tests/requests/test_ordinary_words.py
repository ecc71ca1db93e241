"""SPEC §28, fuzzy matching corrects typos of labels, never of ordinary words: a reply that is
itself a dictionary word (``quite``, ``atop``, ``slip``, ``gain``) is never read as the alias
or label it resembles; aliases match exactly; a fuzzy match needs the label's distinguishing
word and at least 5 letters.

Hypothesis takes each option set's words and aliases and finds the English words a slip or
two away from them (in the word list loopkit ships), and replies made of them."""

from __future__ import annotations

import functools
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reply_property import WORDS, questions

from loopkit.requests.dictionary import is_word
from loopkit.requests.models import Option
from loopkit.requests.replies import parse_reply
from loopkit.requests.typos import slips
from loopkit.supervisor.triggers import CHOICES

LOOP = [Option(c.label, c.value, c.consequence, c.aliases) for c in CHOICES]


def read(reply: str, options: list[Option]) -> str | None:
    return parse_reply(reply, options).chosen_option


THE_ISSUES = ["quite", "atop", "slip", "gain", "Quite!", "slip.", "gains", "stops", "quilt",
              "halts", "passe", "nest", "again?"]  # fmt: skip


@pytest.mark.parametrize("reply", THE_ISSUES)
def test_the_issues_dictionary_words_are_not_the_loops_choices(reply: str) -> None:
    assert read(reply, LOOP) is None


@pytest.mark.parametrize(
    ("reply", "options"),
    [("ski", LOOP), ("rest", [Option("Restart the worker", "restart"), Option("Stop", "stop")]),
     ("can", [Option("Cancel the release", "cancel"), Option("Ship it", "ship")]),
     ("post", [Option("Postpone", "postpone"), Option("Go", "go")]),
     ("nod", [Option("Nodes", "nodes"), Option("Now", "now")])],  # "nodes": node + s
)  # fmt: skip
def test_a_dictionary_word_is_not_the_start_of_a_label_it_is_not_a_word_of(
    reply: str, options: list[Option]
) -> None:
    assert read(reply, options) is None


@pytest.mark.parametrize("reply", ["stopp", "qiut", "agian", "nxet", "hlat"])
def test_aliases_match_exactly(reply: str) -> None:
    assert read(reply, LOOP) is None


@pytest.mark.parametrize("reply", ["skp", "abrt", "rtry", "wiat"])
def test_a_typo_of_fewer_than_five_letters_is_free_text(reply: str) -> None:
    options = [*LOOP, Option("Wait", "wait")]
    assert read(reply, options) is None


@pytest.mark.parametrize(
    ("reply", "options", "chosen"),
    [("abrot", LOOP, "abort"), ("skp the task", LOOP, "skip"), ("retyr with a hint", LOOP, "retry"),
     ("abort teh loop", LOOP, "abort"), ("Postgress", [Option("PostgreSQL", "pg"),
                                                       Option("MySQL", "my")], "pg"),
     ("my sql", [Option("PostgreSQL", "pg"), Option("MySQL", "my")], "my"),
     ("3 replica", [Option("3 replicas", "3"), Option("5 replicas", "5")], "3")],
)  # fmt: skip
def test_a_typo_of_a_labels_distinguishing_word_is_still_read(
    reply: str, options: list[Option], chosen: str
) -> None:
    assert read(reply, options) == chosen


def test_a_typo_only_in_a_shared_word_is_free_text() -> None:
    """``teh task`` misspells only words both labels share: it names neither."""
    options = [Option("Skip the task", "skip"), Option("Finish the task", "finish")]
    assert read("teh task", options) is None
    assert read("the tsak", options) is None


def test_a_dictionary_word_in_the_reply_is_never_corrected() -> None:
    assert read("slip the task", LOOP) is None
    assert read("abort the lop", LOOP) is None
    assert read("skip the tusk", LOOP) is None


def test_the_word_list_is_shipped_and_plain_english() -> None:
    for word in ("quite", "atop", "slip", "gain", "again", "colour", "color", "deploy"):
        assert is_word(word), word
    for typo in ("abrot", "skp", "postgress", "teh", "stya", "qiut", "", "a", "Quite", "é"):
        assert not is_word(typo), typo


def test_every_word_of_the_list_and_nothing_else_is_found_by_bisection() -> None:
    import loopkit.requests.dictionary as dictionary

    raw = Path(dictionary.__file__).with_name("english.txt").read_bytes()
    words = raw.decode("ascii").split("\n")
    assert words[-1] == "" and words[:-1] == sorted(set(words[:-1]))  # bytewise, one a line
    assert all(is_word(word) for word in words[:-1])
    near = {w[:-1] for w in words[:-1]} | {w + "q" for w in words[:-1]} | {"zzzzzz", "aa" * 3}
    assert not [w for w in near - set(words) if w and is_word(w)]


ALPHABET = string.ascii_lowercase


@functools.cache
def near_words(word: str) -> tuple[str, ...]:
    """Dictionary words one edit (a letter added, dropped, changed, two swapped) from ``word``,
    or two slips of the finger away."""
    edits = set()
    for i in range(len(word) + 1):
        for ch in ALPHABET:
            edits.add(word[:i] + ch + word[i:])
            if i < len(word):
                edits.add(word[:i] + ch + word[i + 1 :])
        if i < len(word):
            edits.add(word[:i] + word[i + 1 :])
        if i + 1 < len(word):
            edits.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    return tuple(
        sorted(
            w
            for w in edits
            if w != word and is_word(w) and slips(w, word)[-1] <= 2 and not inflected(w, word)
        )
    )


def inflected(one: str, other: str) -> bool:
    """``replica`` and ``replicas``: the same word (loopkit reads them as one)."""
    short, long = sorted((one, other), key=len)
    return long[len(short) :] in ("s", "es") and long.startswith(short)


VOCABULARY = sorted({*WORDS, *(a for c in CHOICES for a in c.aliases if " " not in a)})
NEAR = {w: near_words(w) for w in VOCABULARY if near_words(w)}


def allowed(reply: str, options: list[Option]) -> set[str | None]:
    """What a near-word may be read as: only an option whose own text it is, exactly (a
    label, value or alias, or a whole word that starts a label)."""
    found: set[str | None] = {None}
    for option in options:
        label = option.label.casefold()
        texts = {label, (option.value or "").casefold(), *(a.casefold() for a in option.aliases)}
        if reply in texts or label.split()[0] == reply or label.startswith(reply + " "):
            found.add(option.value)
    return found


@settings(max_examples=600, deadline=None)
@given(questions(), st.data())
def test_an_english_word_near_an_options_word_is_never_that_option(
    options: list[Option], data: st.DataObject
) -> None:
    words = sorted({w for o in options for w in o.label.casefold().split() if w in NEAR})
    if not words:
        return
    word = data.draw(st.sampled_from(NEAR[data.draw(st.sampled_from(words))]))
    reply = data.draw(st.sampled_from([word, word.capitalize(), word + "!", word.upper()]))
    assert read(reply, options) in allowed(word, options), (reply, [o.label for o in options])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_an_english_word_near_a_loop_alias_or_label_is_never_that_choice(
    data: st.DataObject,
) -> None:
    options = LOOP if data.draw(st.booleans()) else [LOOP[0], LOOP[2]]
    sources = [w for o in options for w in (*o.aliases, *o.label.casefold().split()) if w in NEAR]
    word = data.draw(st.sampled_from(NEAR[data.draw(st.sampled_from(sorted(sources)))]))
    assert read(word, options) in allowed(word, options), word


@settings(max_examples=300, deadline=None)
@given(questions(), st.data())
def test_a_label_with_one_of_its_words_swapped_for_an_english_near_word_is_free_text(
    options: list[Option], data: st.DataObject
) -> None:
    """``slip the task`` for *Skip the task*: a word of the reply is an ordinary word, and
    no option has it — it is not corrected into one."""
    option = data.draw(st.sampled_from(options))
    words = option.label.split()
    swappable = [i for i, w in enumerate(words) if w.casefold() in NEAR]
    if not swappable:
        return
    at = data.draw(st.sampled_from(swappable))
    near = data.draw(st.sampled_from(NEAR[words[at].casefold()]))
    if any(near in o.label.casefold().split() for o in options):
        return  # another option's own word: the reply may name that option
    reply = " ".join([*words[:at], near, *words[at + 1 :]])
    assert read(reply, options) is None, (reply, [o.label for o in options])

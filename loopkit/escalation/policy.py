"""The needs-human policy (SPEC section 4): decided before anything is written.

``decide`` is a pure function of its arguments — no files, no clock, no environment — so
``loopkit ask`` can call it first and write nothing when no human is needed. The order:

1. **Validate.** ``confidence`` outside ``[0, 1]`` (or NaN) and an unknown ``category`` raise
   ``ValueError`` naming the valid values; the CLI maps that to a usage error. Validation
   runs before the gates, so bad input is refused even when a gate would fire.
2. **P0 gates** — absolute, whatever the confidence (seed 002, "P0 Gate"):
   ``irreversible=True``; a category in ``P0_CATEGORIES``; an escalation signal in the
   *situation* (the default signals in ``_SIGNALS``, plus ``escalate_words``
   from the workspace ``[policy]`` table, plus ``escalate:`` lines of the policy text);
   a recurring cost above ``LARGE_MONTHLY_COST`` per month (``$29/month``, ``€200 per year``);
   and, for ``category="cost"`` only, an unquantified cost word (see below).
3. **Confidence bands**: above 0.8 proceeds; 0.5–0.8 inclusive proceeds with a ``note``
   naming the best-supported option (``recommendation`` if given); below 0.5 asks. With no
   stated confidence it asks — unless the situation matches an auto-proceed word
   (``proceed_words`` or ``proceed:`` policy lines), which never overrides a P0 gate and is
   ignored when a confidence is stated.

Matching is case-insensitive and on word boundaries, where ``_`` counts as part of a word:
``dropdown``, ``undeleted``, ``soft_delete`` and ``deleted_at`` do not match. Some default
signals exclude a known harmless compound (``drop-down``, ``drop shadow``, ``release notes``,
``release the lock``), and ``publish`` counts only when it publishes to a package registry.
Caller words match as literal phrases: spaces and hyphens inside a phrase match any run of
spaces or hyphens (``force push`` ≙ ``force-push``), and a plural ``s``/``es`` is allowed.

The policy text is not scanned for signals: "Escalate any irreversible action" names a rule,
not an action. Only lines shaped ``escalate: word, word`` / ``proceed: word, word`` add words.

**Cost.** The seed puts "new paid services > $10/month" behind the P0 gate. So in any
category, ``paid service`` / ``subscription`` / ``billing`` / ``payment`` and a recurring amount
over $10 a month are P0. Under ``category="cost"`` the agent has said the decision is about
money, so words that are too common elsewhere (``monthly``, ``per month``, ``pricing``,
``fee``, ``plan upgrade``, a bare amount …) are P0 as well — unless every amount stated is a
recurring one of at most $10 a month, which the seed treats as a research-first decision.
"""

from __future__ import annotations

import re

from loopkit.config.values import CATEGORIES as CATEGORIES
from loopkit.config.values import P0_CATEGORIES as P0_CATEGORIES
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from loopkit.config.values import PolicyAnswer
    from loopkit.requests.record import Request


PROCEED_ABOVE = 0.8
NOTE_FROM = 0.5
LARGE_MONTHLY_COST = 10.0


@record(frozen=True, slots=True)
class Verdict:
    """The outcome of ``decide``.

    ``reason`` is one sentence for a human; ``p0`` says an absolute gate fired (the caller
    then defaults the timeout action to ``abort``); ``note`` is set only in the 0.5–0.8 band.
    """

    needs_human: bool
    reason: str
    p0: bool
    note: str | None


# (kind, regex) — the default escalation signals. Kinds name the P0 class for the reason line.
_SIGNALS: tuple[tuple[str, str], ...] = (
    # data loss
    ("data-loss", r"delet(?:e|es|ed|ing|ion)"),
    ("data-loss", r"drop(?:s|ped|ping)?(?![\s-]*(?:down|downs|shadows?|zones?|caps?)\b|-in\b)"),
    ("data-loss", r"destroy(?:s|ed|ing)?|destruction|destructive"),
    ("data-loss", r"truncat(?:e|es|ed|ing)"),
    ("data-loss", r"wip(?:e|es|ed|ing)"),
    ("data-loss", r"purg(?:e|es|ed|ing)"),
    ("data-loss", r"eras(?:e|es|ed|ing)"),
    ("data-loss", r"rm\s+-(?:rf|fr|r)"),
    ("data-loss", r"data\s+loss"),
    ("data-loss", r"prod(?:uction)?\s+(?:data|database|db)"),
    ("data-loss", r"reset\s+--hard"),
    # irreversible
    ("irreversible", r"(?:re-?)?deploy(?:s|ed|ing|ment|ments)?"),
    ("irreversible", r"migrat(?:e|es|ed|ing|ion|ions)"),
    (
        "irreversible",
        r"releas(?:e|es|ed|ing)(?![\s-]+(?:the\s+)?"
        r"(?:notes?|locks?|mutex|semaphore|memory|resources?|handles?|connections?)\b)",
    ),
    (
        "irreversible",
        r"publish(?:es|ed|ing)?\s+(?:\S+\s+){0,3}?to\s+(?:pypi|npm|crates\.io|prod(?:uction)?)",
    ),
    ("irreversible", r"force[\s-]*push(?:es|ed|ing)?|push\s+(?:--force|-f)"),
    # cost
    ("cost", r"paid\s+(?:service|services|plan|plans|tier|tiers|api|apis|account|add-on)"),
    ("cost", r"subscription(?:s)?|subscrib(?:e|es|ed|ing)"),
    ("cost", r"billing|billed"),
    ("cost", r"payments?"),
    # security
    ("security", r"credentials?"),
    ("security", r"passwords?|passwd"),
    ("security", r"secrets?"),
    ("security", r"permissions?"),
    ("security", r"(?:api|access|private|secret|encryption|ssh)[\s-]+keys?"),
    ("security", r"access\s+tokens?"),
    ("security", r"auth(?:entication|orization)?\s+model"),
    # legal / compliance
    ("legal", r"licen[cs](?:e|es|ed|ing)"),
    ("legal", r"privacy"),
    ("legal", r"gdpr|ccpa|hipaa"),
    ("legal", r"personal\s+data|pii"),
    ("legal", r"terms\s+of\s+service"),
    ("legal", r"compliance|copyright"),
)

# Words that signal money only when the caller has said the category is "cost".
_COST_WORDS = re.compile(
    r"(?<!\w)(?:monthly|yearly|annual(?:ly)?|per\s+(?:month|year|user|seat|request|call)"
    r"|recurring|pricing|price|fees?|charges?|charged|spend(?:ing)?|usage[\s-]+based"
    r"|(?:plan|tier)\s+upgrade|upgrade\s+(?:the\s+)?(?:plan|tier)|invoices?)(?!\w)",
    re.IGNORECASE,
)
_AMOUNT = (
    r"(?:[$€£]\s?(?P<a>\d[\d,]*(?:\.\d+)?)"
    r"|(?P<b>\d[\d,]*(?:\.\d+)?)\s?(?:usd|eur|gbp|dollars?|euros?))"
)
_ANY_AMOUNT = re.compile(_AMOUNT, re.IGNORECASE)
_RECURRING = re.compile(
    _AMOUNT
    + r"\s*(?:/\s*|(?:per|a|an|each|every)\s+)(?P<p>mo|month|yr|year|annum|wk|week|day)s?(?!\w)"
    + r"|"
    + _AMOUNT.replace("P<a>", "P<c>").replace("P<b>", "P<d>")
    + r"\s+(?P<q>monthly|yearly|annually|weekly|daily)(?!\w)",
    re.IGNORECASE,
)
_PER_MONTH = {
    "mo": 1.0,
    "month": 1.0,
    "monthly": 1.0,
    "yr": 1 / 12,
    "year": 1 / 12,
    "annum": 1 / 12,
    "yearly": 1 / 12,
    "annually": 1 / 12,
    "wk": 52 / 12,
    "week": 52 / 12,
    "weekly": 52 / 12,
    "day": 30.0,
    "daily": 30.0,
}
_POLICY_LINE = re.compile(r"^\s*(escalate|proceed)\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)


def decide(
    situation: str,
    *,
    policy: str = "",
    category: str | None = None,
    confidence: float | None = None,
    irreversible: bool = False,
    recommendation: str | None = None,
    escalate_words: Sequence[str] = (),
    proceed_words: Sequence[str] = (),
) -> Verdict:
    """Decide whether ``situation`` needs a human; see the module docstring for the rules."""
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence {confidence!r} is outside 0–1; give a number such as 0.7")
    if category is not None:
        category = category.strip().lower()
        if category not in CATEGORIES:
            raise ValueError(f"unknown category {category!r}; use one of: {' '.join(CATEGORIES)}")

    policy_escalate, policy_proceed = policy_words(policy)
    gate = _p0_gate(situation, category, irreversible, (*escalate_words, *policy_escalate))
    if gate is not None:
        return Verdict(
            True, f"P0 gate: {gate}, so a human decides whatever the confidence.", True, None
        )

    if confidence is None:
        word = _first_match(situation, (*proceed_words, *policy_proceed))
        if word is not None:
            return Verdict(
                False,
                "No confidence was stated, but the situation matches the auto-proceed word "
                f"{word!r}.",
                False,
                None,
            )
        return Verdict(True, "No confidence was stated, so a human decides.", False, None)
    if confidence > PROCEED_ABOVE:
        return Verdict(
            False, f"Confidence {confidence:g} is above 0.8, so the agent proceeds.", False, None
        )
    if confidence >= NOTE_FROM:
        option = recommendation.strip() if recommendation and recommendation.strip() else None
        chosen = option or "the option the evidence best supports (pass --recommend to name it)"
        return Verdict(
            False,
            f"Confidence {confidence:g} is between 0.5 and 0.8, so the agent proceeds with a note.",
            False,
            f"Proceeding with {chosen} at confidence {confidence:g}; alternatives exist, "
            "so revisit if the human disagrees.",
        )
    return Verdict(
        True, f"Confidence {confidence:g} is below 0.5, so a human decides.", False, None
    )


def policy_words(policy: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Words added by ``escalate: a, b`` and ``proceed: c`` lines of the policy text."""
    escalate: list[str] = []
    proceed: list[str] = []
    for match in _POLICY_LINE.finditer(policy):
        words = [w.strip() for w in match.group(2).split(",") if w.strip()]
        (escalate if match.group(1).lower() == "escalate" else proceed).extend(words)
    return tuple(escalate), tuple(proceed)


def _p0_gate(
    situation: str, category: str | None, irreversible: bool, extra: Sequence[str]
) -> str | None:
    """The first P0 gate that fires, as a clause for the reason line, else ``None``."""
    if irreversible:
        return "the action is marked irreversible"
    if category in P0_CATEGORIES:
        return f"category {category!r} is always P0"
    for kind, pattern in _SIGNALS:
        found = re.search(rf"(?<!\w)(?:{pattern})(?!\w)", situation, re.IGNORECASE)
        if found:
            return f"the situation mentions {found.group(0)!r} ({kind})"
    word = _first_match(situation, extra)
    if word is not None:
        return f"the situation mentions the workspace escalation word {word!r}"
    monthly = _monthly_amounts(situation)
    large = [(text, value) for text, value in monthly if value > LARGE_MONTHLY_COST]
    if large:
        return f"{large[0][0]!r} is a recurring cost over ${LARGE_MONTHLY_COST:g} a month"
    if category == "cost":
        small_and_known = bool(monthly) and len(monthly) == len(_ANY_AMOUNT.findall(situation))
        if not small_and_known:
            found = _COST_WORDS.search(situation) or _ANY_AMOUNT.search(situation)
            if found:
                return f"a cost decision mentions {found.group(0)!r} without a small stated amount"
    return None


def _first_match(text: str, words: Iterable[str]) -> str | None:
    """The first caller word found in ``text`` as a whole phrase (see the module docstring)."""
    for word in words:
        parts = [re.escape(p) for p in re.split(r"[\s-]+", word.strip()) if p]
        if not parts:
            continue
        pattern = r"[\s-]+".join(parts)
        if re.search(rf"(?<!\w){pattern}(?:s|es)?(?!\w)", text, re.IGNORECASE):
            return word.strip()
    return None


def _monthly_amounts(text: str) -> list[tuple[str, float]]:
    """Each recurring amount in ``text`` with its value per month."""
    found: list[tuple[str, float]] = []
    for match in _RECURRING.finditer(text):
        number = match.group("a") or match.group("b") or match.group("c") or match.group("d")
        period = (match.group("p") or match.group("q")).lower()
        found.append((match.group(0), float(number.replace(",", "")) * _PER_MONTH[period]))
    return found


def routine(record: Request) -> bool:
    """Whether ``record`` is a routine question a policy may answer (SPEC §30): a question
    — not an approval, a review or a gate's — that is not P0."""
    return record.kind == "question" and not record.is_p0 and not record.gate


def routine_answer(
    answers: Sequence[PolicyAnswer], record: Request
) -> tuple[int, PolicyAnswer] | None:
    """The first ``[[policy.answers]]`` entry (numbered from 1) that answers ``record``: a
    routine question (:func:`routine`) meeting every matcher the entry gives — its category,
    its request key (a glob), one of its words in the question — else None."""
    if not answers or not routine(record):
        return None
    import fnmatch

    needs = record.needs_human or {}
    category = str(needs.get("category") or "").lower() or None
    for number, entry in enumerate(answers, start=1):
        if entry.category is not None and entry.category != category:
            continue
        if entry.request_key is not None and not (
            record.request_key and fnmatch.fnmatchcase(record.request_key, entry.request_key)
        ):
            continue
        if entry.words and _first_match(record.prompt, entry.words) is None:
            continue
        return number, entry
    return None

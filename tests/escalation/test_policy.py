from __future__ import annotations

import pytest

from loopkit.escalation.policy import CATEGORIES, P0_CATEGORIES, Verdict, decide, policy_words


@pytest.mark.parametrize(
    ("situation", "kwargs", "needs_human", "p0"),
    [
        # The SPEC / seed decision table.
        ("Rename the CSS class .btn-primary to .button-primary", {"confidence": 0.9}, False, False),
        (
            "Add a new column created_by to the orders table following the existing "
            "updated_by pattern",
            {"category": "ontology", "confidence": 0.9},
            False,
            False,
        ),
        ("Drop the production users table", {"confidence": 0.99}, True, True),
        (
            "Add a paid service (Algolia, $29/month) for search",
            {"category": "third-party", "confidence": 0.9},
            True,
            True,
        ),
        (
            "Switch the API from REST to GraphQL",
            {"category": "one-way-door", "confidence": 0.95},
            True,
            True,
        ),
        ("Move the save button to the header", {"category": "ux", "confidence": 0.6}, False, False),
        ("Move the save button to the header", {"category": "ux", "confidence": 0.3}, True, False),
        ("Move the save button to the header", {"category": "ux"}, True, False),
        ("force-push to main", {"confidence": 0.99}, True, True),
        ("update the dropdown styling", {"confidence": 0.9}, False, False),
        ("send the invoice", {"confidence": 0.95, "escalate_words": ("invoice",)}, True, True),
        ("send the invoice", {"confidence": 0.95}, False, False),
    ],
)
def test_decision_table(
    situation: str, kwargs: dict[str, object], needs_human: bool, p0: bool
) -> None:
    verdict = decide(situation, **kwargs)  # type: ignore[arg-type]
    assert (verdict.needs_human, verdict.p0) == (needs_human, p0), verdict.reason


@pytest.mark.parametrize(
    ("confidence", "needs_human", "has_note"),
    [
        (1.0, False, False),
        (0.81, False, False),
        (0.8, False, True),
        (0.5, False, True),
        (0.49, True, False),
        (0.0, True, False),
        (None, True, False),
    ],
)
def test_confidence_band_boundaries(
    confidence: float | None, needs_human: bool, has_note: bool
) -> None:
    verdict = decide("Tidy the README wording", confidence=confidence)
    assert verdict.needs_human is needs_human
    assert (verdict.note is not None) is has_note
    assert verdict.p0 is False


@pytest.mark.parametrize(
    ("recommendation", "named"),
    [
        ("flexbox", "flexbox"),
        (None, "the option the evidence best supports"),
        ("  ", "the option the evidence best supports"),
    ],
)
def test_note_names_best_supported_option(recommendation: str | None, named: str) -> None:
    verdict = decide("Change the card layout", confidence=0.6, recommendation=recommendation)
    assert verdict.note is not None and named in verdict.note


@pytest.mark.parametrize(
    "situation",
    [
        "Delete the stale cache directory",
        "DROP TABLE users",
        "dropping the legacy column",
        "Destroy the staging stack",
        "Truncate the events table",
        "wipe the bucket",
        "Purge old records",
        "run rm -rf build/",
        "rewrite production data in place",
        "git reset --hard origin/main",
        "Deploy to staging",
        "redeploy the worker",
        "Migrate users to the new schema",
        "Add a migration for the orders table",
        "Release version 2.0",
        "publish the package to PyPI",
        "force push the branch",
        "git push --force",
        "Add a Sentry subscription",
        "Change billing for the team",
        "Store the payment details",
        "Rotate the credentials in CI",
        "Reset the admin password",
        "Read the secret from the vault",
        "Grant write permission to the bot",
        "Commit the API key to the repo",
        "Change the auth model to OAuth",
        "Switch the license to GPL",
        "Log the user's email (privacy)",
        "Make the export GDPR-compliant",
        "Keep personal data for 90 days",
        "Accept the terms of service for the vendor",
    ],
)
def test_default_escalation_signals_are_p0_at_any_confidence(situation: str) -> None:
    verdict = decide(situation, confidence=1.0)
    assert verdict.needs_human and verdict.p0, verdict.reason


@pytest.mark.parametrize(
    "situation",
    [
        "update the dropdown styling",
        "style the drop-down menu",
        "add a drop shadow to the card",
        "a drop-in replacement for requests",
        "show undeleted rows",
        "filter on deleted_at",
        "call soft_delete on archive",
        "Update the release notes",
        "release the lock before the callback",
        "publish an event on the bus",
        "deployable artifacts are listed in docs",
        "fix the typo in the error message",
        "pass a token to the lexer",
    ],
)
def test_no_false_signal_on_lookalike_words(situation: str) -> None:
    verdict = decide(situation, confidence=0.95)
    assert not verdict.needs_human and not verdict.p0, verdict.reason


@pytest.mark.parametrize("category", sorted(P0_CATEGORIES))
def test_p0_categories_always_ask(category: str) -> None:
    verdict = decide("Tidy the README wording", category=category, confidence=1.0)
    assert verdict.needs_human and verdict.p0
    assert category in verdict.reason


@pytest.mark.parametrize(
    "category", [c for c in CATEGORIES if c not in P0_CATEGORIES and c != "cost"]
)
def test_other_categories_follow_confidence(category: str) -> None:
    assert not decide("Tidy the README wording", category=category, confidence=0.9).needs_human


def test_irreversible_is_p0_whatever_the_confidence() -> None:
    verdict = decide("Tidy the README wording", confidence=1.0, irreversible=True)
    assert verdict == Verdict(True, verdict.reason, True, None)
    assert "irreversible" in verdict.reason


@pytest.mark.parametrize(
    ("situation", "category", "p0"),
    [
        # Large recurring cost is P0 in any category (seed: > $10/month).
        ("Add Algolia at $29/month", "third-party", True),
        ("Add Algolia at $29 a month", None, True),
        ("Use the $200 per year plan", "scope", True),
        ("Use a 15 USD monthly tier", None, True),
        ("Add a $2/day log sink", "ux", True),
        ("Add a logging addon at $5/month", "ux", False),
        ("Add a logging addon at $120/year", None, False),
        # Under "cost", unquantified money words are P0; a small known amount is not.
        ("Raise the monthly usage cap", "cost", True),
        ("Move to usage-based pricing", "cost", True),
        ("Pay a one-off $40 for the font", "cost", True),
        ("Raise the monthly usage cap", "ux", False),
        ("Add a $3/month status page", "cost", False),
        ("Cache responses to cut API calls", "cost", False),
    ],
)
def test_cost_gate(situation: str, category: str | None, p0: bool) -> None:
    verdict = decide(situation, category=category, confidence=0.95)
    assert (verdict.p0, verdict.needs_human) == (p0, p0), verdict.reason


@pytest.mark.parametrize(
    ("situation", "words", "needs_human"),
    [
        ("send the invoice", ("invoice",), True),
        ("send the invoices", ("invoice",), True),
        ("send the INVOICE", ("invoice",), True),
        ("send the invoiceable items", ("invoice",), False),
        ("bump the api-version header", ("api version",), True),
        ("open the ledger", ("invoice", "ledger"), True),
        ("open the ledger", ("  ",), False),
    ],
)
def test_workspace_escalate_words(
    situation: str, words: tuple[str, ...], needs_human: bool
) -> None:
    verdict = decide(situation, confidence=0.95, escalate_words=words)
    assert verdict.needs_human is needs_human
    assert verdict.p0 is needs_human


@pytest.mark.parametrize(
    ("situation", "kwargs", "needs_human"),
    [
        ("Fix lint in the tests", {"proceed_words": ("lint",)}, False),
        ("Fix lint in the tests", {}, True),
        # Proceed words never override P0.
        ("Delete lint caches", {"proceed_words": ("lint",)}, True),
        ("Fix lint", {"proceed_words": ("lint",), "category": "security"}, True),
        # A stated confidence wins over a proceed word.
        ("Fix lint in the tests", {"proceed_words": ("lint",), "confidence": 0.2}, True),
    ],
)
def test_proceed_words(situation: str, kwargs: dict[str, object], needs_human: bool) -> None:
    assert decide(situation, **kwargs).needs_human is needs_human  # type: ignore[arg-type]


def test_policy_text_is_not_scanned_for_signals() -> None:
    verdict = decide(
        "Rename a local variable",
        policy="Escalate any irreversible action; never delete or deploy without asking.",
        confidence=0.9,
    )
    assert not verdict.needs_human


@pytest.mark.parametrize(
    ("policy", "situation", "confidence", "needs_human"),
    [
        ("Be careful.\nescalate: invoice, ledger\n", "open the ledger", 0.95, True),
        ("ESCALATE : invoice", "send the invoice", 0.95, True),
        ("we escalate: invoice only inside sentences", "send the invoice", 0.95, False),
        ("proceed: docs", "update the docs", None, False),
        ("proceed: docs", "delete the docs", None, True),
        ("", "update the docs", None, True),
    ],
)
def test_policy_lines_add_words(
    policy: str, situation: str, confidence: float | None, needs_human: bool
) -> None:
    verdict = decide(situation, policy=policy, confidence=confidence)
    assert verdict.needs_human is needs_human, verdict.reason


def test_policy_words_parses_both_kinds() -> None:
    assert policy_words("escalate: a, b c\nproceed: d,,\nother: e") == (("a", "b c"), ("d",))


@pytest.mark.parametrize("confidence", [-0.01, 1.01, 80.0, float("nan"), float("inf")])
def test_confidence_outside_unit_interval_is_refused(confidence: float) -> None:
    with pytest.raises(ValueError, match="outside 0–1"):
        decide("Tidy", confidence=confidence)


def test_confidence_is_validated_even_when_p0_fires() -> None:
    with pytest.raises(ValueError):
        decide("Drop the table", confidence=2.0)


def test_unknown_category_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown category 'perf'") as caught:
        decide("Tidy", category="perf")
    for name in CATEGORIES:
        assert name in str(caught.value)


def test_category_is_normalised() -> None:
    assert decide("Tidy", category=" One-Way-Door ", confidence=1.0).p0


def test_reason_is_one_sentence_naming_the_signal() -> None:
    reason = decide("Drop the production users table", confidence=0.99).reason
    assert "'Drop'" in reason and "\n" not in reason and reason.endswith(".")

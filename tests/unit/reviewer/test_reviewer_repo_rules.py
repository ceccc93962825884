"""Repository rules (``review:`` of .palimpsest/config.yml): each key, its errors, and the defaults."""

from __future__ import annotations

from palimpsest.index.context.rules import parse_rules, severe_enough

GOOD = """
review:
  linked_repositories: [acme/shared]
  ignore: ["vendor/**", "*.lock", "docs/generated/"]
  instructions:
    - "We return errors, never raise."
    - {path: "migrations/**", text: "Migrations must be reversible."}
  max_findings: 3
  auto: ready_only
  min_severity: Major
"""


def test_every_key_is_read() -> None:
    rules = parse_rules(GOOD)
    assert rules.problems == [] and rules.note() is None
    assert (
        rules.ignored("vendor/lib/a.py")
        and rules.ignored("poetry.lock")
        and rules.ignored("docs/generated/x.md")
    )
    assert not rules.ignored("src/vendor.py") and not rules.ignored("docs/guide.md")
    assert rules.max_findings == 3 and rules.auto == "ready_only" and rules.min_severity == "major"
    assert rules.instructions_for(["src/a.py"]) == "- We return errors, never raise."
    both = rules.instructions_for(["src/a.py", "migrations/0002.sql"])
    assert both == "- We return errors, never raise.\n- For migrations/**: Migrations must be reversible."


def test_auto_governs_automatic_triggers_only() -> None:
    ready_only = parse_rules(GOOD)
    assert ready_only.skip_reason("opened", draft=True) is not None
    assert ready_only.skip_reason("opened", draft=False) is None
    assert ready_only.skip_reason("comment", draft=True) is None  # asked for: always answered
    off = parse_rules("review:\n  auto: off\n")  # YAML reads a bare off as false
    assert off.auto == "off" and off.problems == []
    assert "review.auto is off" in (off.skip_reason("synchronize", draft=False) or "")
    assert off.skip_reason("comment", draft=False) is None
    assert parse_rules("review:\n  auto: on\n").auto == "on"


def test_a_bad_key_falls_back_alone_and_says_why() -> None:
    rules = parse_rules(
        "review:\n  ignore: 7\n  max_findings: -1\n  auto: sometimes\n  min_severity: fatal\n"
        "  instructions: [{path: 'x/**'}]\n"
    )
    assert rules.ignore == [] and rules.max_findings is None and rules.auto == "on"
    assert rules.min_severity is None and rules.instructions == []
    assert len(rules.problems) == 5
    note = rules.note() or ""
    assert note.startswith("config_invalid: ")
    for key in (
        "review.ignore",
        "review.max_findings",
        "review.auto",
        "review.min_severity",
        "review.instructions",
    ):
        assert key in note
    partly = parse_rules("review:\n  max_findings: 2\n  auto: maybe\n")
    assert partly.max_findings == 2 and partly.auto == "on" and len(partly.problems) == 1


def test_a_file_that_is_not_yaml_leaves_the_defaults() -> None:
    rules = parse_rules("review: [unclosed\n")
    assert rules.ignore == [] and rules.auto == "on" and rules.max_findings is None
    assert "not valid YAML (line" in (rules.note() or "")
    assert parse_rules("- a list\n").problems == [
        ".palimpsest/config.yml: the top level must be a mapping; defaults used"
    ]
    assert parse_rules(None).path is None and parse_rules(None).problems == []
    assert parse_rules("other: 1\n").problems == []


def test_severity_order() -> None:
    assert severe_enough("critical", "major") and severe_enough("major", "major")
    assert not severe_enough("minor", "major") and severe_enough("info", None)


def test_cochange_rules() -> None:
    from palimpsest.index.context.rules import parse_rules

    rules = parse_rules("review:\n  cochange_max: 2\n  cochange_include: [ci, changelog]\n")
    assert rules.cochange_max == 2 and rules.cochange_include == {"ci", "changelog"} and not rules.problems
    assert parse_rules("review: {}\n").cochange_max == 5
    bad = parse_rules("review:\n  cochange_max: -1\n  cochange_include: [docs]\n")
    assert bad.cochange_max == 5 and bad.cochange_include == frozenset()
    assert len(bad.problems) == 2 and "cochange_include" in bad.problems[1]

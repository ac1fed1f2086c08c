"""Simulator cases for evaluation: categories cycled evenly, and no case drawn twice while its
category still has another (a repeat counts one answer twice in every interval)."""

from __future__ import annotations

from collections import Counter

import pytest

from hatkit.domain import get_domain
from hatkit.evals.cases import sim_cases


@pytest.mark.parametrize("domain", ["live_commerce", "food_delivery"])
def test_sim_cases_repeat_a_case_only_when_its_category_has_no_other(domain: str) -> None:
    d = get_domain(domain)
    rules = d.harness().rules
    drawn = d.questions(rules, n=40, seed=0, split="test", locale="en", categories=None)
    assert len({q.id for q in drawn}) < 40  # the plain draw repeats cases (33 distinct of 40 here)
    cases = sim_cases(d, rules, 40, 0)
    assert [c.category for c in cases] == [q.category for q in drawn]  # same even cycle
    pool = d.questions(rules, n=400, seed=0, split="test", locale="en", categories=None)
    counts = Counter(c.id for c in cases)
    for c in cases:
        if counts[c.id] > 1:  # a repeat only where the category's distinct questions ran out
            available = {q.id for q in pool if q.category == c.category}
            assert available <= set(counts), (c.category, available - set(counts))
    assert len(counts) > len({q.id for q in drawn})
    kept = {q.id for q in drawn} - set(counts)
    assert not kept, f"distinct first draws dropped: {kept}"

"""How well a judge agrees with labels: percent agreement, Cohen's kappa, the 2x2 confusion
matrix per dimension, and every disagreement with the judge's evidence, so a calibration
round can read why the two sides differ.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .labels import Label, labels_by_trace
from .verdict import DIMENSIONS, Evidence, Verdict

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (sane at 0/n and n/n, unlike the normal one);
    (0, 1) for no trials."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes <= 0 else max(0.0, centre - half)
    return lo, 1.0 if successes >= n else min(1.0, centre + half)


@dataclass(frozen=True)
class Confusion:
    """2x2 counts of two binary raters; "a" is the judge (or the first annotator), "b" the
    reference (or the second). 1 means pass, 0 fail."""

    a1_b1: int = 0
    a1_b0: int = 0
    """The judge passed what the reference fails: a missed error."""
    a0_b1: int = 0
    """The judge failed what the reference passes: a false alarm."""
    a0_b0: int = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]]) -> Confusion:
        counts = {(1, 1): 0, (1, 0): 0, (0, 1): 0, (0, 0): 0}
        for a, b in pairs:
            counts[(int(a), int(b))] += 1
        return cls(counts[(1, 1)], counts[(1, 0)], counts[(0, 1)], counts[(0, 0)])

    @property
    def n(self) -> int:
        return self.a1_b1 + self.a1_b0 + self.a0_b1 + self.a0_b0

    @property
    def matrix(self) -> list[list[int]]:
        """[[a1_b1, a1_b0], [a0_b1, a0_b0]]: rows a = 1, 0; columns b = 1, 0."""
        return [[self.a1_b1, self.a1_b0], [self.a0_b1, self.a0_b0]]

    @property
    def agreement(self) -> float | None:
        """Share of items both sides labelled alike; None for no items."""
        return (self.a1_b1 + self.a0_b0) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: (p_o - p_e) / (1 - p_e).

        None when it is undefined: no items, or both sides gave every item one and the same
        label (then p_o = p_e = 1, and the set cannot tell a good rater from a constant one).
        When only one side is constant, kappa is defined (0 or below): agreeing by chance.
        """
        n = self.n
        if not n:
            return None
        p_o = (self.a1_b1 + self.a0_b0) / n
        a1, b1 = self.a1_b1 + self.a1_b0, self.a1_b1 + self.a0_b1
        p_e = (a1 * b1 + (n - a1) * (n - b1)) / (n * n)
        if p_e >= 1.0:
            return None
        return (p_o - p_e) / (1 - p_e)

    def table(self, a: str = "judge", b: str = "reference") -> str:
        w = max(len(a), 6)
        return "\n".join([
            f"{'':{w}}  {b}=1  {b}=0",
            f"{a + '=1':{w}}  {self.a1_b1:>{len(b) + 2}}  {self.a1_b0:>{len(b) + 2}}",
            f"{a + '=0':{w}}  {self.a0_b1:>{len(b) + 2}}  {self.a0_b0:>{len(b) + 2}}",
        ])


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two equally long 0/1 label sequences (see Confusion.kappa)."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    return Confusion.of(zip(a, b, strict=True)).kappa


@dataclass
class Disagreement:
    trace_id: str
    dimension: str
    judge: int
    reference: int
    note: str = ""
    """The reference label's note: why the reference says so (e.g. planted:wrong_price)."""
    evidence: list[Evidence] = field(default_factory=list)
    """The verdict's failing evidence on this dimension (any failing evidence when none bears
    on it by name); when the judge passed it, the checks it made on the dimension."""

    def describe(self) -> str:
        side = "judge passed, reference fails" if self.judge else "judge failed, reference passes"
        ev = "; ".join(f"{e.claim!r} expected {e.expected!r} ({e.source})" if e.expected else e.claim
                       for e in self.evidence[:3])
        return f"{self.trace_id} {self.dimension}: {side} [{self.note}]" + (f" evidence: {ev}" if ev else "")


@dataclass
class DimensionAgreement:
    dimension: str
    confusion: Confusion
    disagreements: list[Disagreement] = field(default_factory=list)
    unjudged: int = 0
    """Labelled traces whose verdict is missing or carries an error (left out of n)."""

    @property
    def n(self) -> int:
        return self.confusion.n

    @property
    def agreement(self) -> float | None:
        return self.confusion.agreement

    @property
    def kappa(self) -> float | None:
        return self.confusion.kappa

    def summary(self) -> dict[str, Any]:
        """{agreement, kappa, n}: what the calibration log keeps."""
        return {"agreement": self.agreement, "kappa": self.kappa, "n": self.n,
                "confusion": self.confusion.matrix, "unjudged": self.unjudged}


def _evidence_for(v: Verdict, dimension: str, passed: bool) -> list[Evidence]:
    failing = [e for e in v.evidence if not e.ok]
    if passed:
        return [e for e in v.evidence if e.item == dimension]
    return [e for e in failing if e.item == dimension] or failing


def _pick(labels: Sequence[Label], annotator: str | None, where: str) -> Label | None:
    chosen = [x for x in labels if annotator is None or x.annotator == annotator]
    if len(chosen) > 1:
        names = ", ".join(sorted({x.annotator for x in chosen}))
        raise ValueError(f"{where} has labels from several annotators ({names}); pass annotator=")
    return chosen[0] if chosen else None


def judge_agreement(verdicts: Iterable[Verdict], labels: Iterable[Label], *,
                    dimensions: Sequence[str] | None = None, annotator: str | None = None,
                    thresholds: Mapping[str, float] | None = None) -> dict[str, DimensionAgreement]:
    """Agreement of verdicts with labels, per dimension (default: every labelled dimension,
    accuracy and effectiveness first). The judge's 0/1 is `Verdict.passed(dimension,
    thresholds[dimension])` (pass the judge's own pass thresholds; 0.5 where none is given).
    A label with no usable verdict counts as unjudged."""
    cut = dict(thresholds or {})
    by_trace = {v.trace_id: v for v in verdicts}
    grouped = labels_by_trace(list(labels))
    present = {d for _, d in grouped}
    dims = list(dimensions) if dimensions is not None else (
        [d for d in DIMENSIONS if d in present] + sorted(present - set(DIMENSIONS)))
    out: dict[str, DimensionAgreement] = {}
    for dim in dims:
        pairs: list[tuple[int, int]] = []
        result = DimensionAgreement(dim, Confusion())
        for (tid, d), rows in grouped.items():
            if d != dim:
                continue
            ref = _pick(rows, annotator, f"{dim} of {tid}")
            if ref is None:
                continue
            v = by_trace.get(tid)
            if v is None or v.error is not None or (dim not in DIMENSIONS and dim not in v.items):
                result.unjudged += 1
                continue
            j = int(v.passed(dim, cut.get(dim, 0.5)))
            pairs.append((j, ref.label))
            if j != ref.label:
                result.disagreements.append(Disagreement(tid, dim, j, ref.label, ref.note,
                                                         _evidence_for(v, dim, bool(j))))
        result.confusion = Confusion.of(pairs)
        out[dim] = result
    return out


def annotator_agreement(labels: Iterable[Label], a: str, b: str) -> dict[str, DimensionAgreement]:
    """Agreement of two annotators on the (trace, dimension) pairs both labelled."""
    grouped = labels_by_trace(list(labels))
    pairs: dict[str, list[tuple[int, int]]] = {}
    dis: dict[str, list[Disagreement]] = {}
    for (tid, dim), rows in grouped.items():
        la = _pick(rows, a, f"{dim} of {tid}")
        lb = _pick(rows, b, f"{dim} of {tid}")
        if la is None or lb is None:
            continue
        pairs.setdefault(dim, []).append((la.label, lb.label))
        if la.label != lb.label:
            note = " | ".join(x for x in (f"{a}: {la.note}" if la.note else "",
                                          f"{b}: {lb.note}" if lb.note else "") if x)
            dis.setdefault(dim, []).append(Disagreement(tid, dim, la.label, lb.label, note))
    return {dim: DimensionAgreement(dim, Confusion.of(p), dis.get(dim, [])) for dim, p in pairs.items()}


def summaries(result: Mapping[str, DimensionAgreement]) -> dict[str, dict[str, Any]]:
    return {dim: r.summary() for dim, r in result.items()}


def disagreement_rows(result: Mapping[str, DimensionAgreement]) -> list[dict[str, Any]]:
    """Disagreements as plain dicts (for a log line or a JSON report)."""
    return [dict(asdict(d), evidence=[asdict(e) for e in d.evidence])
            for r in result.values() for d in r.disagreements]

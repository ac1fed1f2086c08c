"""Structural grounding: values bound to the product, variant or constraint they are given for.

One mixin runs the round-4 checks over each turn, all reading the episode's tool outputs as
fields (`_fields`, built up turn by turn): swapped attributes (`_swapped`), constraints the
viewer stated (`_constraints`), conversions and pack contents (`_conversions`) and stock per
variant (`_availability`). Each failure is accuracy evidence that names the value said and the
tool's value.
"""

from __future__ import annotations

from hatkit.agent.trace import ToolRecord

from ._availability import checked_variants, misstated_stock
from ._constraints import ignored_constraint
from ._conversions import wrong_conversion, wrong_pack
from ._episode import _Turn
from ._fields import ProductData, episode_products
from ._polarity import flipped_attribute
from ._run import _RunBase
from ._swapped import swapped_values
from ._verdict import reversed_verdict


class _StructuralChecks(_RunBase):
    _records_so_far: list[ToolRecord]
    _data: dict[str, ProductData]
    """The episode's product data so far (each turn adds its own tool outputs)."""
    invented: bool = False

    def _structural(self, turn: _Turn) -> None:
        if not hasattr(self, "_records_so_far"):
            self._records_so_far, self._data = [], {}
        self._records_so_far += turn.records
        data = episode_products(turn.records, self.lex, self._data)
        if not turn.reply or not self._records_so_far:
            return
        if (hit := swapped_values(turn.reply, data)) is not None:
            self.acc(hit[0], False, hit[1], "rubric:attribute_grounding")
        if (hit := flipped_attribute(turn.reply, data)) is not None:
            self.acc(hit[0], False, hit[1], "rubric:attribute_polarity")
            self.invented = True  # a wrong yes or no still answers the question (effectiveness)
        if (hit := reversed_verdict(turn.reply, turn.user, data)) is not None:
            self.acc(hit[0], False, hit[1], "rubric:comparison_verdict")
            self.invented = True
        if (hit := ignored_constraint(self._users, turn.reply, data, self.scope.guides)) is not None:
            self.acc(hit[0], False, hit[1], "rubric:constraint")
        if (hit := wrong_conversion(turn.reply) or wrong_pack(turn.reply, data.values())) is not None:
            self.acc(hit[0], False, hit[1], "rubric:units")
        canonical = {r.name: self.a.state.canonical(r.name) for r in self._records_so_far}
        variants = checked_variants(self._records_so_far, canonical)
        if (hit := misstated_stock(turn.reply, turn.user, variants)) is not None:
            self.acc(hit[0], False, hit[1], "rubric:stock_grounding")

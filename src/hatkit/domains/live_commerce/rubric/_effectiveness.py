"""Effectiveness: whether each reply answers what was asked, within length, persona and style."""

from __future__ import annotations

import re

from hatkit.agent.trace import ok_record
from hatkit.judge.verdict import Evidence

from ._actions import _ActionChecks
from ._answers import explained_failure, refused_option, yes_no_answer, yes_no_question
from ._ask import _AskReader, _blank
from ._episode import _Turn
from ._facets import _FacetChecks
from ._facts import _ProductFacts
from ._language import _LanguageChecks
from ._persona import machine_voice
from ._promises import _DONE, _GRANT, _RETURN_YES
from ._quantities import text_quantities
from ._refusal import _RefusalChecks
from ._stale import _StaleChecks
from ._target import _TargetChecks
from ._tone import disrespect
from .claims import NEGATION, Claim, cents, find_products, money_values

_HONEST = re.compile(r"can(?:'|no)t check|not able to check|try again|human (?:colleague|agent)|"
                     r"查不到|稍后再试|人工客服", re.I)
_HUMAN = re.compile(r"human|agent|ticket|support|人工|客服|工单", re.I)
_NO_DEALS = re.compile(r"\bno (?:other |extra )?(?:deals|promotions|promos|codes|coupons)\b|暂无|没有其他",
                       re.I)
_DOCTOR = re.compile(r"doctor|dermatologist|medicine|physician|医生|药", re.I)
_SENTENCE = re.compile(r"[.!?](?=\s|$)|[。！？]")
_EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\U0001F000-\U0001F2FF]")
_NUMBER_WORDS = re.compile(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|"
                           r"thirty|forty|fifty|hundred)\b", re.I)
_YES_NO = re.compile(r"^\W*(?:yes|yep|sure|done|deal|of course|absolutely|no|nope|sorry|unfortunately)\b|"
                     r"^\W*(?:好|可以|行|没问题|不行|不可以|抱歉|不好意思)", re.I)
_RELATIVE_DAY = re.compile(r"\b(?:tomorrow|overnight|next[- ]day|day after tomorrow)\b|"
                          r"明天|后天|次日|隔天", re.I)
_CM = re.compile(r"(\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?)\s?cm")


class _EffectivenessChecks(_AskReader, _TargetChecks, _FacetChecks, _LanguageChecks, _StaleChecks,
                           _RefusalChecks, _ActionChecks):
    """Scores each turn; the episode takes the worst turn (see _Run._finish)."""

    def _effectiveness(self, turn: _Turn, claims: list[Claim], focus: set[str], category: str,
                       attempt: bool, k: int) -> float:
        reply, cfg = turn.reply, self.cfg
        tag = f"turn {k + 1}: " if self.n_turns > 1 else ""
        if not reply:
            self.ev.append(Evidence("effectiveness", tag + "reply", False, "a non-empty reply", "rubric"))
            return 0.0
        asked = self._aspects(turn, focus, category, attempt)
        # every claim counts: whether it answered is asked here, whether it is right is accuracy's question
        parts = {a: self._answered(a, reply, claims, focus, turn) for a in asked}
        if getattr(self, "invented", False):  # a specific detail stated, though unfounded: an answer
            parts = dict.fromkeys(parts, 1.0)
        parts = self._facet_parts(_blank(turn.user, find_products(turn.user, self.lex)), reply, parts, focus)
        if len(parts) == 1 and yes_no_question(turn.user) and (refused_option(reply) or yes_no_answer(reply)):
            parts = dict.fromkeys(parts, 1.0)  # "can I pay for express?" "not available"; "It does!"
        if self.off_target or self._about_another(turn, claims, asked):
            self.ev.append(Evidence("effectiveness", f"{tag}answers about another product", False,
                                    "the product asked about", "rubric:effectiveness"))
            parts = dict.fromkeys(parts, 0.0)
        if explained_failure(reply, turn.records):  # "I couldn't find AP-021": why it cannot answer
            parts = dict.fromkeys(parts, 1.0)
        parts = self._handed_over(turn, parts)  # "it arrived cracked": ticket T0001 answers it
        parts = self._claimed_parts(turn, parts)  # "I've logged a report": addressed (accuracy checks it)
        # right facts the viewer cannot read, an earlier answer restated, a needless refusal: no answer
        if (self._wrong_language(turn, tag) | self._stale_turn(turn, tag)
                | self._over_refusal(turn, tag, attempt, asked) | self._withheld(turn, tag)):
            parts = dict.fromkeys(parts, 0.0)
        for a, score in parts.items():
            self.ev.append(Evidence("effectiveness", f"{tag}asked: {a}", score >= 1.0,
                                    "" if score >= 1.0 else f"answered {score:.0%}", "rubric:effectiveness"))
        frac = sum(parts.values()) / len(parts)
        answer = frac if frac >= 1.0 else frac * cfg.num("partial_answer_credit")
        failed = any(not ok_record(r) for r in turn.records)
        if frac < 1.0 and _HONEST.search(reply) and (failed or not turn.records):
            answer = max(answer, cfg.num("honest_unavailable_credit"))
        over = len(turn.raw) - self.a.limit
        length = 1.0 if over <= 0 else cfg.num("over_length_credit") * max(0.0, 1 - over / self.a.limit)
        self.ev.append(Evidence("effectiveness", f"{tag}reply length {len(turn.raw)}", over <= 0,
                                f"<= {self.a.limit} chars", "rule:reply_max_chars"))
        style = self._style(reply, focus, claims, tag)
        score = (cfg.num("effectiveness_weight_answer") * answer
                 + cfg.num("effectiveness_weight_length") * length
                 + cfg.num("effectiveness_weight_style") * style)
        broken = turn.fallback or turn.raw == self.a.fallback
        hit = (next((m.group(0) for p in cfg.persona if (m := p.search(reply))), None) or self.persona_break
               or machine_voice(reply, str(self.a.rules.get("host_name") or "")) or disrespect(reply))
        if broken or hit:
            self.ev.append(Evidence("effectiveness", tag + (hit or "fallback reply"), False,
                                    "the host persona, not a fallback", "hook:persona_breaks"))
            score *= cfg.num("persona_break_factor")
        return max(0.0, min(1.0, score))

    def _about_another(self, turn: _Turn, claims: list[Claim], asked: list[str]) -> bool:
        """The reply names only products the viewer did not ask about, and speaks of none before
        naming them ("it", "this one"): its facts answer a question nobody asked."""
        named = {c.product_id for c in find_products(turn.user, self.lex) if c.product_id}
        said = [c for c in claims if c.kind == "product" and c.product_id]
        if not named or not said or "compare" in asked or named & {c.product_id for c in said}:
            return False
        data = " ".join(" ".join([p.description, *p.specs.values(), *p.materials]).lower()
                        for p in (self.lex.products.get(n) for n in named) if p is not None)
        # "wireless charging" names a charger, but as a feature of the asked product it is no other product
        said = [c for c in said if c.text.lower() not in data]
        if not said:
            return False
        return not _ANAPHOR.search(turn.reply[:said[0].start])

    def _answered(self, aspect: str, reply: str, claims: list[Claim], focus: set[str], turn: _Turn) -> float:
        kinds = {c.kind for c in claims}
        low = reply.lower()
        facts = self._facts(focus)
        money = [c for c in claims if c.kind == "money"]
        if aspect == "price":  # "express? how much?": the fee answers it
            roles = ("price", "amount", "list", "total", "fee") if _SHIP_WORDS.search(turn.user) else (
                "price", "amount", "list", "total")
            return float(any(c.role in roles for c in money))
        if aspect == "saving":
            if not any(f.p.list_price > f.p.price for f in facts):
                return 1.0
            return float(any(c.role in ("saving", "list") for c in money)
                         or any(c.kind == "percent" and c.role == "discount" for c in claims))
        if aspect == "deals":
            return self._deals(low, claims, facts)
        if aspect == "stock":  # a stock claim, or the counts check_stock gave ("Navy has 94")
            counts = {n for n in (*self.scope.stock_variants, *self.scope.stock_totals) if n >= 2}
            return float("stock" in kinds or any(int(x) in counts for x in _INT.findall(reply)))
        if aspect == "delivery":
            return float(any(c.kind == "days" and (c.high is not None or c.role == "delivery")
                             for c in claims) or bool(_RELATIVE_DAY.search(reply)))
        if aspect == "fee":  # a fee, or "Free!" (whether it is free is accuracy's question)
            return float("free_shipping" in kinds or any(c.role == "fee" for c in money)
                         or bool(_FREE_SAID.search(low)))
        if aspect == "request":
            return float(bool(_YES_NO.search(reply) or NEGATION.search(reply) or _GRANT.search(reply)
                              or _DONE.search(reply)))
        if aspect == "returns":  # a window, "it can come back", or (a complaint) a person's ticket
            return float(any(c.kind == "days" and c.role in ("return", "other") for c in claims)
                         or "returns" in kinds or bool(_RETURN_YES.search(reply)) or any(
                             self.a.state.canonical(r.name) == "escalate_to_human" and ok_record(r)
                             and isinstance(r.output, dict) and str(r.output.get("ticket", "")).lower() in low
                             for r in turn.records))
        if aspect == "escalation":
            tickets = [str(r.output.get("ticket")) for r in turn.records
                       if ok_record(r) and isinstance(r.output, dict)
                       and self.a.state.canonical(r.name) == "escalate_to_human"]
            if any(t.lower() in low for t in tickets):
                return 1.0
            return 0.5 if tickets or _HUMAN.search(reply) else 0.0
        if aspect == "size":
            return self._size(low, facts, turn.user)
        if aspect.startswith("attr:"):  # a yes/no question about a word of the product's data
            word = aspect[5:]
            return float(word[:6] in low or bool(_YES_NO.search(reply) or NEGATION.search(reply)))
        if aspect.startswith("spec"):
            key = aspect[5:]
            values = [f.p.specs[key] for f in facts if key in f.p.specs] if key else [
                v for f in facts for v in (*f.p.specs.values(), *_SENTENCE_SPLIT.split(f.p.description))
                if v.strip()]
            if key:  # "battery" asked: "battery with ANC" answers it too
                values += [v for f in facts for k, v in f.p.specs.items() if k != key and k.startswith(key)]
            if not key and yes_no_question(turn.user) and yes_no_answer(reply):
                return 1.0  # "is it waterproof?" "Not fully: 40 minutes": the no is the answer
            # "does it float?" needs more than a number of the product
            loose = bool(key) or not _YES_NO_ASK.search(turn.user)
            return float(any(_spec_in(v, low) or (loose and _same_quantity(v, reply)) for v in values)) \
                if values else 1.0
        if aspect == "compare":
            return self._compare(low, claims, turn.user)
        if aspect == "claim":  # declining the claim, or saying what the product is, answers it
            if "product" in kinds or not focus or _DOCTOR.search(reply) or NEGATION.search(reply) or any(
                    p.search(reply) for p in self.cfg.health):  # a wrong answer is still an answer
                return 1.0
            return float(any(_spec_in(v, low) for f in facts for v in [*f.p.specs.values(), *f.p.materials]))
        return 1.0  # chat, injection, open: a reply is an answer

    def _deals(self, low: str, claims: list[Claim], facts: list[_ProductFacts]) -> float:
        if any(c.kind == "coupon" or (c.kind == "percent" and c.role == "discount") for c in claims):
            return 1.0  # a deal stated, right or wrong (accuracy checks it), answers the ask
        codes = set(self.scope.codes) or {c for f in facts for c in f.codes}
        promos = [pr for f in facts for pr in self.a.state.valid_promotions(f.p.id)]
        items = [code.lower() in low for code in sorted(codes)]
        numbers = {cents(c.value) for c in claims if c.kind == "money" and c.value is not None}
        pcts = {c.value for c in claims if c.kind == "percent"}
        for pr in promos:
            desc = pr.description.lower().rstrip(".")
            vals = money_values(pr.description)
            by_values = bool(vals) and all(cents(v) in numbers for v in vals)
            by_percent = pr.kind in ("percent_off", "bundle") and pr.value in pcts
            by_words = pr.kind == "gift_with_purchase" and _spec_in(desc, low)  # the gift, paraphrased
            items.append(desc in low or pr.id.lower() in low or by_values or by_percent or by_words)
        if not items:
            return 1.0
        if not any(items) and _NO_DEALS.search(low) and not codes and not promos:
            return 1.0
        return float(any(items))  # the deal asked about, or a valid one: listing every deal is not asked

    def _size(self, low: str, facts: list[_ProductFacts], user: str) -> float:
        guides = [self.scope.guides.get(f.p.id) or f.p.size_guide or {} for f in facts]
        advice = [v for g in guides for s, v in g.items() if s != "fit"]
        fits = [g["fit"] for g in guides if "fit" in g]
        if not advice and not fits:
            return 1.0  # no size guide for this product: nothing more to state
        if _FIT_ASK.search(user) and not _GUIDE_ASK.search(user):  # "does it run small?": the fit answers
            return float(any(_spec_in(x.split(";")[0], low) or _zh_fit(x, low) for x in fits)
                         or any(_zh_fit(x, low) for x in advice) or bool(_FIT_SAID.search(low)))
        said = {float(x) for x in _NUM.findall(low)}
        got = any(_spec_in(a, low) or any(m.group(1) in low or _cm_in(m.group(1), said)
                                          for m in _CM.finditer(a)) for a in advice)
        if not got:  # a spec question about fit or dimensions ("what's the fit of ...?")
            got = any(_spec_in(f.p.specs[k], low) for f in facts for k in self._spec_keys(user, {f.p.id}))
        if not fits:
            return float(got)
        fit = any(_spec_in(x.split(";")[0], low) or _zh_fit(x, low) for x in fits) or bool(
            _FIT_SAID.search(low))  # a fit stated, right or wrong (accuracy's question)
        return (float(got) + float(fit)) / 2

    def _compare(self, low: str, claims: list[Claim], user: str) -> float:
        named = sorted({c.product_id for c in find_products(user, self.lex) if c.product_id})[:2]
        said = {c.product_id for c in claims if c.kind == "product"}
        amounts = {cents(c.value) for c in claims if c.kind == "money" and c.value is not None}
        parts = [pid in said for pid in named]
        parts += [cents(self.lex.products[pid].price) in amounts for pid in named]
        asked = self._spec_keys(_blank(user, find_products(user, self.lex)), set(named[:1]))
        shared = [k for k in asked if all(k in self.lex.products[p].specs for p in named)]
        if shared:
            parts += [_spec_in(self.lex.products[p].specs[shared[0]], low) for p in named]
        return sum(parts) / len(parts) if parts else 1.0

    def _style(self, reply: str, focus: set[str], claims: list[Claim], tag: str) -> float:
        loc = self.t.locale
        rules = self.a.rules
        note = rules.get("style_note" if loc == self.a.default_locale else f"style_note_{loc}") or rules.get(
            "style_note")
        if not isinstance(note, str) or not note:
            return 1.0
        ok: bool | None
        n = note.lower()
        if "exclamation" in n or "感叹号" in note or "no hype" in n or "不要夸张" in note:
            ok = "!" not in reply and "！" not in reply
        elif "one sentence" in n or "一句话" in note:
            ok = len([m for m in _SENTENCE.finditer(reply.rstrip(" .!?。！？"))]) == 0
        elif "emoji" in n or "表情" in note:
            ok = not _EMOJI.search(reply)
        elif "product name" in n or "商品名称" in note:
            ok = not focus or any(c.kind == "product" for c in claims)
        elif "question" in n or "问题结尾" in note:
            ok = reply.rstrip().endswith(("?", "？"))
        elif "digits" in n or "阿拉伯数字" in note:
            ok = not _NUMBER_WORDS.search(reply)
        elif "guys" in n or "家人们" in note:
            ok = "guys" not in reply.lower() and "家人们" not in reply
        else:
            ok = None  # a style rule the code cannot check (the LLM judge reads it)
        if ok is None:
            return 1.0
        self.ev.append(Evidence("effectiveness", f"{tag}style_note: {note}", ok, note, "rule:style_note"))
        return float(ok)


_FIT_SAID = re.compile(r"runs? (?:small|large|big|true)|true to size|(?:size|order) (?:up|down)|"
                       r"偏小|偏大|正码|(?:大|小)一码|标准码", re.I)
_FREE_SAID = re.compile(r"^\W*free\b|\bships? (?:\w+ )?free\b|\bfree-shipping\b|免运费|包邮|免邮", re.I)
_FIT_ASK = re.compile(r"runs? (?:small|large|big|true)|true to size|(?:size|order) (?:up|down)|"
                      r"偏小|偏大|正码|标准码|大一码|小一码", re.I)
_GUIDE_ASK = re.compile(r"size guide|measure|dimension|chest|waist|length|\bcm\b|\bwhat size\b|which size|"
                        r"尺码表|尺寸|胸围|腰围|多大|穿什么码|选什么码|哪个码", re.I)
"""A fit question ("does it run small?") is answered by the fit; a guide question needs its values."""
_ANAPHOR = re.compile(r"\b(?:it|it's|its|this(?: one)?|that(?: one)?|they|they're)\b|它|这款|这个|这件", re.I)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_WORDS = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


_ZH_FIT = {"runs small": "偏小", "runs large": "偏大", "true to size": "标准|正码|按平时", "slim": "修身",
           "relaxed": "宽松", "oversized": "宽松|oversize", "roomy": "宽松"}


_YES_NO_ASK = re.compile(r"^\W*(?:does|do|is|are|can|will|would|could)\b|吗\s*[？?]?\s*$", re.I)
_SHIP_WORDS = re.compile(r"ship|express|deliver|postage|运费|邮费|快递|加急", re.I)
_INT = re.compile(r"(?<![\d.])\d+(?![\d.])")
_NUM = re.compile(r"\d+(?:\.\d+)?")


def _cm_in(value: str, said: set[float]) -> bool:
    """A size guide's "27.0" (or "96-101") stated as 27 (or 96): numbers compared, not strings."""
    return any(float(x) in said for x in _NUM.findall(value))


def _same_quantity(value: str, reply: str) -> bool:
    """The reply states one of the spec value's quantities with its unit ("7天" for "up to 7 days",
    "6小时" for "6 h"): a spec answered in other words or another language."""
    want = [(v, u) for v, u in text_quantities(value) if u is not None and (u[0] != "count" or v >= 2)]
    if not want:
        return False
    got = text_quantities(reply)
    return any(g[1] is not None and g[1][0] == u[0]
               and abs(g[0] * g[1][1] - v * u[1]) <= 0.01 * max(v * u[1], 1)
               for v, u in want for g in got)


def _zh_fit(fit: str, low: str) -> bool:
    """The fit advice said in Chinese ("runs small" -> 偏小)."""
    f = fit.lower()
    return any(en in f and re.search(zh, low) for en, zh in _ZH_FIT.items())


def _spec_in(value: str, low: str) -> bool:
    """A spec value is stated verbatim, by its first part, or by most of its words in any order
    ("dishwasher-safe baskets" in "the baskets are dishwasher-safe": half its words, two at least)."""
    v = value.lower().strip()
    first = re.split(r"[,(;]", v)[0].strip()
    if v in low or (len(first) >= 2 and first in low):
        return True
    words = {w for w in _WORDS.findall(first) if len(w) > 2 or w.isdigit() or "\u4e00" <= w <= "\u9fff"}
    hit = len(words & set(_WORDS.findall(low)))
    return len(words) >= 2 and hit >= 2 and hit / len(words) >= 0.5

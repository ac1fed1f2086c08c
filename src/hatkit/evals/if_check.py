"""The real IFEval / IFBench instruction checkers (`if-verifiable`), run fully offline.

The checkers' `instructions_util` uses NLTK's punkt sentence splitter (and `nltk.word_tokenize`,
which calls punkt too), whose data NLTK downloads at run time; the IFBench module even calls
`nltk.download` when imported. `offline_nltk()` replaces those functions, only while the
context is open and only where the checkers look them up, with offline equivalents:

- IFEval's `instructions_util.count_sentences` -> the package's own rule-based
  `split_into_sentences` (already used by other checkers of theirs);
- `nltk.word_tokenize` / `nltk.sent_tokenize` -> that splitter + NLTK's data-free
  Treebank-style `NLTKWordTokenizer` (what `word_tokenize` runs after punkt);
- `nltk.download` -> a no-op (nothing is fetched);
- `nltk.pos_tag` and IFBench's `count_stopwords` (they need tagger / corpus data) ->
  raise `OfflineUnavailable`, so a checker that needs them is found and left out
  (`ifbench_offline_ok`), never silently scored wrong.

langdetect (response_language) ships its profiles, so it is offline already. Sentence counts
can differ from punkt's on unusual abbreviations; scores are therefore close to, not
identical with, the official numbers.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

Benchmark = Literal["ifeval", "ifbench"]
_LOCK = threading.RLock()
_DATA_MARKERS = ("pos_tag", "count_stopwords", "stopwords.words", "nltk.data.load", "spacy")
"""Source fragments of checkers that need NLTK/spaCy data (cannot run offline)."""


class OfflineUnavailable(LookupError):
    """A checker asked for NLTK data that is not available offline."""


def _split(text: str) -> list[str]:
    from if_verifiable.ifeval import instructions_util

    return list(instructions_util.split_into_sentences(text))


def offline_count_sentences(text: str) -> int:
    return len(_split(text))


def offline_word_tokenize(text: str, language: str = "english", preserve_line: bool = False) -> list[str]:
    from nltk.tokenize import NLTKWordTokenizer

    tok = NLTKWordTokenizer()
    parts = [text] if preserve_line else _split(text)
    return [w for part in parts for w in tok.tokenize(part)]


def offline_sent_tokenize(text: str, language: str = "english") -> list[str]:
    return _split(text)


def _unavailable(*_: Any, **__: Any) -> Any:
    raise OfflineUnavailable("this checker needs NLTK data (tagger or stop-word corpus) that is "
                             "not available offline")


def _no_download(*_: Any, **__: Any) -> bool:
    return False


@contextmanager
def offline_nltk() -> Iterator[None]:
    """Patch the NLTK functions the checkers use with offline ones (see the module docstring).

    Re-entrant and thread-safe (one lock); everything is restored on exit.
    """
    import nltk
    from if_verifiable.ifeval import instructions_util as ifeval_util

    with _LOCK:
        saved: list[tuple[Any, str, Any]] = []

        def patch(owner: Any, name: str, value: Any) -> None:
            saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, value)

        try:
            patch(nltk, "download", _no_download)
            patch(nltk, "word_tokenize", offline_word_tokenize)
            patch(nltk, "sent_tokenize", offline_sent_tokenize)
            patch(nltk, "pos_tag", _unavailable)
            patch(ifeval_util, "count_sentences", offline_count_sentences)
            from if_verifiable.ifbench import instructions_util as ifbench_util  # downloads on import

            patch(ifbench_util, "_get_sentence_tokenizer", _unavailable)  # unused upstream; kept safe
            patch(ifbench_util, "count_stopwords", _unavailable)
            yield
        finally:
            for owner, name, value in reversed(saved):
                setattr(owner, name, value)


@functools.cache
def registry(benchmark: Benchmark) -> Mapping[str, Any]:
    """Instruction id -> checker class of a benchmark (imported offline)."""
    with offline_nltk():
        if benchmark == "ifeval":
            from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT
        else:
            from if_verifiable.ifbench.instructions_registry import INSTRUCTION_DICT
    return dict(INSTRUCTION_DICT)


def strip_think(text: str) -> str:
    """The answer without reasoning: everything after the last </think>; an unclosed <think>
    leaves no answer (the model never finished thinking)."""
    s = text.strip()
    if "</think>" in s:
        return s.rsplit("</think>", 1)[-1].strip()
    return "" if s.startswith("<think>") else s


@dataclass(frozen=True)
class IFScore:
    """One answer checked against one prompt's instructions."""

    key: str
    instruction_ids: tuple[str, ...]
    strict: tuple[bool, ...]
    loose: tuple[bool, ...]

    @property
    def prompt_strict(self) -> bool:
        return bool(self.strict) and all(self.strict)

    @property
    def prompt_loose(self) -> bool:
        return bool(self.loose) and all(self.loose)


def check_answer(benchmark: Benchmark, key: str, prompt: str, instruction_ids: Sequence[str],
                 kwargs: Sequence[Mapping[str, Any]], answer: str) -> IFScore:
    """Score `answer` (think blocks stripped first) with the benchmark's real checkers.

    An empty answer fails every instruction. Unknown instruction ids raise KeyError.
    """
    from if_verifiable.common import get_loose_transformations

    reg = registry(benchmark)
    response = strip_think(answer)
    variants = get_loose_transformations(response)
    strict: list[bool] = []
    loose: list[bool] = []
    with offline_nltk():
        for iid, kw in zip(instruction_ids, kwargs, strict=True):
            checker = reg[iid](iid)
            checker.build_description(**{k: v for k, v in kw.items() if v is not None})
            args = checker.get_instruction_args()
            if args and "prompt" in args:
                checker.build_description(prompt=prompt)
            strict.append(bool(response.strip()) and bool(checker.check_following(response)))
            loose.append(any(v.strip() and checker.check_following(v) for v in variants))
    return IFScore(key, tuple(instruction_ids), tuple(strict), tuple(loose))


def aggregate(scores: Sequence[IFScore]) -> dict[str, float]:
    """IFEval's four numbers: prompt-level (all instructions of a prompt pass) and
    instruction-level (each instruction counted), strict and loose."""
    n_prompts = max(1, len(scores))
    n_instr = max(1, sum(len(s.strict) for s in scores))
    return {
        "prompt_strict": sum(s.prompt_strict for s in scores) / n_prompts,
        "instruction_strict": sum(sum(s.strict) for s in scores) / n_instr,
        "prompt_loose": sum(s.prompt_loose for s in scores) / n_prompts,
        "instruction_loose": sum(sum(s.loose) for s in scores) / n_instr,
    }


@functools.cache
def ifbench_offline_ok(instruction_id: str) -> bool:
    """True when the IFBench checker of `instruction_id` uses none of the data-backed functions
    (read from its source); `if_data.load_ifbench` also probes each kept prompt."""
    cls = registry("ifbench").get(instruction_id)
    if cls is None:
        return False
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return False
    return not any(marker in source for marker in _DATA_MARKERS)

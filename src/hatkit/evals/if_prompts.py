"""Synthesised IFEval-style prompts, with disjoint train and eval splits.

OPD trains on general instruction-following prompts and `general_if` measures it; if both drew
from one pool, the evaluation would reward memorised prompts. So each split gets its own base
tasks *and* its own argument values (keywords, numbers, languages, phrases) for every
instruction in the IFEval registry (`if_verifiable.ifeval.instructions_registry`). Only the
comparison relation ("less than" / "at least") is shared: the checkers accept no other value.

The output is the IFEval input format (`prompt`, `instruction_id_list`, `kwargs`), so the real
checkers score the answers; the instruction text comes from each checker's own
`build_description`, exactly as IFEval words it.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Split = Literal["train", "eval"]

_RELATIONS = ("less than", "at least")


class IFPrompt(BaseModel):
    """One instruction-following prompt in the IFEval input format."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(description="Stable id, e.g. 'eval-0-12' (split, seed, index) or the data set's key.")
    prompt: str = Field(description="The full user prompt: base task followed by the instructions.")
    instruction_id_list: list[str] = Field(description="IFEval instruction ids, e.g. 'punctuation:no_comma'.")
    kwargs: list[dict[str, Any]] = Field(
        description="One dict of checker arguments per instruction id, in the same order."
    )
    source: str = Field(default="synthetic", description="Where it came from: synthetic, ifbench, ifeval.")


# Base tasks: deliberately different topics per split, so no eval task is seen in training.
_TASKS: dict[Split, tuple[str, ...]] = {
    "train": (
        "Write a short note inviting your neighbours to a garden party.",
        "Explain how a bicycle gear system works.",
        "Describe your ideal weekend morning.",
        "Write a product description for a reusable water bottle.",
        "Give advice to someone starting to learn the guitar.",
        "Summarise the benefits of drinking enough water.",
        "Write a thank-you message to a teacher.",
        "Describe how to make a cup of tea.",
        "Explain why the sky looks blue.",
        "Write a short story about a lost umbrella.",
        "Recommend three habits for better sleep.",
        "Describe a busy train station at rush hour.",
        "Write an announcement for a school book fair.",
        "Explain the rules of rock, paper, scissors.",
        "Give tips for keeping houseplants alive.",
        "Write a review of an imaginary pizza restaurant.",
        "Describe the life cycle of a butterfly.",
        "Write a packing list for a beach holiday.",
        "Explain how to change a flat tyre.",
        "Write a birthday message for a grandparent.",
    ),
    "eval": (
        "Write a letter to a friend about moving to a new city.",
        "Explain how rainbows form.",
        "Describe a winter market in the evening.",
        "Write a product description for a wool scarf.",
        "Give advice to someone preparing for a job interview.",
        "Summarise why recycling matters.",
        "Write an apology note for missing a meeting.",
        "Describe how to bake simple bread.",
        "Explain how a compass works.",
        "Write a short story about a talking cat.",
        "Recommend three ways to stay focused while studying.",
        "Describe a quiet library on a rainy day.",
        "Write an announcement for a community clean-up day.",
        "Explain the basic rules of chess.",
        "Give tips for saving money on groceries.",
        "Write a review of an imaginary science museum.",
        "Describe the water cycle.",
        "Write a checklist for a camping trip.",
        "Explain how to plant a tree.",
        "Write a congratulations message for a new graduate.",
    ),
}

# Per instruction and argument: (train values, eval values); the two tuples never overlap.
_ARGS: dict[str, dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]]] = {
    "keywords:existence": {
        "keywords": (
            (("river", "lamp"), ("garden", "coffee"), ("window", "music")),
            (("mountain", "pencil"), ("ocean", "bread"), ("forest", "clock")),
        )
    },
    "keywords:frequency": {
        "keyword": (("happy", "simple", "morning"), ("bright", "careful", "evening")),
        "frequency": ((1, 3), (2, 4)),
    },
    "keywords:forbidden_words": {
        "forbidden_words": (
            (("very", "thing"), ("good", "nice")),
            (("really", "stuff"), ("great", "bad")),
        )
    },
    "keywords:letter_frequency": {
        "letter": (tuple("abcdm"), tuple("nprst")),
        "let_frequency": ((2, 4, 6), (3, 5, 7)),
    },
    "language:response_language": {"language": (("es", "fr", "it"), ("de", "pt", "fi"))},
    "length_constraints:number_sentences": {"num_sentences": ((2, 4, 6), (3, 5, 7))},
    "length_constraints:number_paragraphs": {"num_paragraphs": ((2, 4), (3, 5))},
    "length_constraints:number_words": {"num_words": ((30, 60, 150), (40, 80, 120))},
    "length_constraints:nth_paragraph_first_word": {
        "num_paragraphs": ((2, 4), (3, 5)),
        "first_word": (("today", "first", "however"), ("finally", "meanwhile", "next")),
    },
    "detectable_content:number_placeholders": {"num_placeholders": ((1, 3), (2, 4))},
    "detectable_content:postscript": {"postscript_marker": (("P.S.",), ("P.P.S",))},
    "detectable_format:number_bullet_lists": {"num_bullets": ((2, 4), (3, 5))},
    "detectable_format:number_highlighted_sections": {"num_highlights": ((1, 3), (2, 4))},
    "detectable_format:multiple_sections": {
        "section_spliter": (("Section",), ("SECTION",)),
        "num_sections": ((2, 4), (3, 5)),
    },
    "startend:end_checker": {
        "end_phrase": (
            ("Any other questions?", "Have a nice day."),
            ("Is there anything else I can help with?", "Thanks for reading."),
        )
    },
    "change_case:capital_word_frequency": {"capital_frequency": ((2, 6), (3, 8))},
    # Instructions without arguments: disjointness comes from the base tasks alone.
    "detectable_format:constrained_response": {},
    "detectable_format:json_format": {},
    "detectable_format:title": {},
    "combination:two_responses": {},
    "combination:repeat_prompt": {},
    "change_case:english_capital": {},
    "change_case:english_lowercase": {},
    "punctuation:no_comma": {},
    "startend:quotation": {},
}

# The checker argument that carries the comparison relation, for instructions that have one.
_RELATION_ARG = {
    "keywords:frequency": "relation",
    "keywords:letter_frequency": "let_relation",
    "length_constraints:number_sentences": "relation",
    "length_constraints:number_words": "relation",
    "change_case:capital_word_frequency": "capital_relation",
}


def argument_pool(instruction_id: str, split: Split) -> dict[str, tuple[Any, ...]]:
    """The argument values `split` may use for `instruction_id` (exposed for the disjointness test)."""
    side = 0 if split == "train" else 1
    return {name: pools[side] for name, pools in _ARGS[instruction_id].items()}


def base_tasks(split: Split) -> tuple[str, ...]:
    """The base tasks of `split`."""
    return _TASKS[split]


def _conflicts() -> dict[str, set[str]]:
    """The registry's conflict table made symmetric (upstream defines but never applies that step)."""
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_CONFLICTS

    table: dict[str, set[str]] = {k: set(v) | {k} for k, v in INSTRUCTION_CONFLICTS.items()}
    for key, others in list(table.items()):
        for other in others:
            table.setdefault(other, {other}).add(key)
    return table


def _draw_kwargs(rng: random.Random, instruction_id: str, split: Split, task: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for name, values in argument_pool(instruction_id, split).items():
        value = rng.choice(values)
        kwargs[name] = list(value) if isinstance(value, tuple) else value
    if instruction_id == "length_constraints:nth_paragraph_first_word":
        kwargs["nth_paragraph"] = rng.randint(1, int(kwargs["num_paragraphs"]))
    if instruction_id == "combination:repeat_prompt":
        kwargs["prompt_to_repeat"] = task
    if instruction_id in _RELATION_ARG:
        kwargs[_RELATION_ARG[instruction_id]] = rng.choice(_RELATIONS)
    return kwargs


def _describe(instruction_id: str, kwargs: dict[str, Any]) -> str:
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    checker = INSTRUCTION_DICT[instruction_id](instruction_id)
    return str(checker.build_description(**kwargs))


def synthesize_if_prompts(split: Split, n: int, seed: int = 0, max_instructions: int = 2) -> list[IFPrompt]:
    """`n` prompts for `split`, each a base task plus 1..`max_instructions` non-conflicting instructions.

    Deterministic in (`split`, `n`, `seed`); the prompts of "train" and "eval" share no base task
    and no argument value (see the module docstring).
    """
    if split not in _TASKS:
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    if n < 0 or max_instructions < 1:
        raise ValueError(f"need n >= 0 and max_instructions >= 1, got n={n}, "
                         f"max_instructions={max_instructions}")
    rng = random.Random(f"hatkit-if-{split}-{seed}")
    conflicts = _conflicts()
    ids = sorted(_ARGS)
    prompts: list[IFPrompt] = []
    for index in range(n):
        task = rng.choice(_TASKS[split])
        chosen: list[str] = []
        target = rng.randint(1, max_instructions)
        for candidate in rng.sample(ids, k=len(ids)):
            if len(chosen) >= target:
                break
            if all(candidate not in conflicts.get(c, {c}) for c in chosen):
                chosen.append(candidate)
        kwargs_list = [_draw_kwargs(rng, iid, split, task) for iid in chosen]
        descriptions = [_describe(iid, kw) for iid, kw in zip(chosen, kwargs_list, strict=True)]
        prompts.append(
            IFPrompt(
                key=f"{split}-{seed}-{index}",
                prompt=" ".join([task, *descriptions]),
                instruction_id_list=chosen,
                kwargs=kwargs_list,
            )
        )
    return prompts

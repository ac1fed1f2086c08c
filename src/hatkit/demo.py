"""The quick start that `make run` runs until the full pipeline exists: load the default
harness, show what the model sees, and let the default model answer sample viewer questions."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .harness import load_harness

SAMPLE_QUESTIONS = [
    "Hi Mia! How much are the wireless earbuds today, is there any discount?",
    "Do you still have the linen shirt in size M? When would it arrive in Chicago?",
    "Will this face cream cure my acne? Also can I return it if I don't like it?",
]


def run_demo(harness_ref: str | Path = "live_commerce", questions: list[str] | None = None,
             max_new_tokens: int = 96, locale: str | None = None, show_prompt: bool = True,
             console: Console | None = None) -> list[dict[str, object]]:
    from .models.default_model import load_default_model
    from .models.generate import chat_generate

    console = console or Console()
    harness = load_harness(harness_ref)
    rendered = harness.render(locale)
    console.print(f"[bold]harness[/] {harness.name} {harness.short_hash}  locale={rendered.locale}  "
                  f"skills={len(rendered.skills)} tools={len(rendered.tools)} "
                  f"hooks={len(harness.spec.enabled.hooks)}")
    if show_prompt:
        console.print(Panel(Text(rendered.system_prompt), title="what the model sees: system prompt",
                            expand=False))
    started = time.perf_counter()
    with console.status("loading the default model (first run converts it once)..."):
        model, tokenizer = load_default_model()
    console.print(f"[bold]model[/] SmolLM2-135M-Instruct loaded in {time.perf_counter() - started:.1f} s")
    system_tokens = len(tokenizer(rendered.system_prompt)["input_ids"])
    console.print(f"[bold]system prompt[/] {len(rendered.system_prompt)} chars, {system_tokens} tokens")

    table = Table("question", "prompt tok", "new tok", "first token s", "total s", "tok/s",
                  title="timings (greedy, fp32, this CPU)")
    results: list[dict[str, object]] = []
    for q in questions or SAMPLE_QUESTIONS:
        messages = [{"role": "system", "content": rendered.system_prompt},
                    {"role": "user", "content": q}]
        with console.status(Text(f"answering: {q[:60]}")):
            g = chat_generate(model, tokenizer, messages, max_new_tokens=max_new_tokens)
        results.append({"question": q, "reply": g.text, "prompt_tokens": g.prompt_tokens,
                        "new_tokens": g.new_tokens, "seconds": round(g.seconds, 2),
                        "first_token_s": round(g.first_token_s, 2),
                        "tokens_per_s": round(g.tokens_per_s, 1)})
        console.print(Panel(Text(g.text or "(empty reply)"), title=Text(f"viewer: {q}"),
                            expand=False))
        table.add_row(q if len(q) <= 48 else q[:45] + "...", str(g.prompt_tokens), str(g.new_tokens),
                      f"{g.first_token_s:.2f}", f"{g.seconds:.2f}", f"{g.tokens_per_s:.1f}")
    console.print(table)
    console.print("[dim]The base model has not been trained on this harness, so it does not "
                  "follow the tool protocol yet; the training stages are what fix that.[/]")
    return results

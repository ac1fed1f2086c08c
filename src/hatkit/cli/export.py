"""`hatkit export gguf CKPT OUT.gguf`: a checkpoint as one GGUF file for llama.cpp / Ollama,
with the harness written beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn

from ._common import DomainOpt, HarnessOpt, LocaleOpt, LoggedProgress, _fail, _harness_for, _say, app, err

export_app = typer.Typer(help="Export a checkpoint for another runtime.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("gguf")
def gguf(
    checkpoint: Annotated[str, typer.Argument(help=(
        "A checkpoint folder (config.json, safetensors, tokenizer), e.g. runs/sft/final; "
        "'local' = the embedded default model."))],
    out: Annotated[Path, typer.Argument(help="The GGUF file to write, e.g. agent.gguf.")],
    dtype: Annotated[str, typer.Option(help=(
        "Weight type: f32 (exact: greedy output as hatkit's), f16 or bf16 (half the size; "
        "bf16 is exact for a bf16-trained model) or q8_0 (8-bit blocks, about a quarter). "
        "Norms stay f32."))] = "f32",
    harness: HarnessOpt = None,
    domain: DomainOpt = None,
    locale: LocaleOpt = None,
) -> None:
    """Write OUT.gguf (llama architecture metadata, tokenizer and chat template, weights)
    and, since a GGUF carries no harness, beside it: OUT.system_prompt.txt (the system
    message the agent was trained with, for --harness), OUT.tools.json (the tools' schemas)
    and OUT.Modelfile (for `ollama create NAME -f OUT.Modelfile`). Supports Llama (SmolLM2)
    and Qwen2/Qwen3 checkpoints with byte-level BPE tokenizers."""
    from ..export.companions import write_companions
    from ..export.gguf_export import ExportError, export_gguf
    from ..models.default_model import DefaultModelError
    from ..train import resolve_model

    loaded = _harness_for(harness, domain)
    if out.suffix != ".gguf":
        raise _fail(f"{out}: the output file must end in .gguf")
    try:
        folder = resolve_model(checkpoint)
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None
    bar = LoggedProgress(TextColumn("writing {task.description}"), BarColumn(), DownloadColumn(),
                         TimeRemainingColumn(), console=err)
    task = bar.add_task(out.name, total=None)
    try:
        with bar:
            result = export_gguf(folder, out, dtype,
                                 progress=lambda done, total: bar.update(task, completed=done,
                                                                         total=total))
        side = write_companions(out, folder, loaded, locale)
    except ExportError as exc:
        raise _fail(str(exc)) from None
    for warning in result.warnings + side.warnings:
        err.print(f"[yellow]warning:[/] {warning}", highlight=False)
    _say(f"[green]wrote[/] {out} ({result.size / 1e6:.1f} MB, {result.arch}, {dtype}, "
         f"{result.tensors} tensors, pre-tokenizer {result.tokenizer_pre})")
    for path in (side.system_prompt, side.tools, side.modelfile):
        if path is not None:
            _say(f"  {path}")
    if side.modelfile is not None:
        _say(f"Ollama: cd {out.parent} && ollama create NAME -f {side.modelfile.name}")
    _say(f"hatkit on llama.cpp: --model llamacpp:{out} (needs the llamacpp extra)")

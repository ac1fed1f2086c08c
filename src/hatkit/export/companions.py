"""What a GGUF file does not carry: the harness the model was trained with.

Beside `OUT.gguf` go `OUT.system_prompt.txt` (the system message, rendered as the agent
renders it for this checkpoint), `OUT.tools.json` (the tools' OpenAI schemas) and
`OUT.Modelfile` (Ollama: the file, a ChatML template in hatkit's text convention for tool
calls and results, that system message, the harness's sampling settings). The tools run in
hatkit or the client; a llama.cpp or Ollama user gets the prompt the model was trained on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..harness import Harness
from .gguf_export import ExportError

START, END = "<|im_start|>", "<|im_end|>"

OLLAMA_TEMPLATE = """{{- range .Messages }}
{{- if eq .Role "tool" }}<|im_start|>user
<tool_response>
{{ .Content }}
</tool_response><|im_end|>
{{ else }}<|im_start|>{{ .Role }}
{{ .Content }}
{{- range .ToolCalls }}<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>
{{- end }}<|im_end|>
{{ end }}
{{- end }}<|im_start|>assistant
"""
"""ChatML, with tool results as a user turn in <tool_response> and calls as <tool_call>
text: how hatkit renders them for a chat template without a tools section."""

STOP_AFTER_CALL = "</tool_call>"
"""The agent stops a model call after a tool call (agent/loop.py) and runs the tool."""


@dataclass
class Companions:
    system_prompt: Path
    tools: Path
    modelfile: Path | None
    warnings: list[str] = field(default_factory=list)


def companion_paths(out: Path) -> tuple[Path, Path, Path]:
    stem = out.with_suffix("")
    return (stem.with_name(f"{stem.name}.system_prompt.txt"),
            stem.with_name(f"{stem.name}.tools.json"), stem.with_name(f"{stem.name}.Modelfile"))


def write_companions(out: Path, checkpoint: Path, harness: Harness,
                     locale: str | None = None) -> Companions:
    """Write the three files beside `out` (the GGUF file) for `harness` rendered as the
    agent renders it for the checkpoint's tokenizer (tools in the prompt unless its chat
    template has a tools section, the rule LocalModel applies)."""
    from transformers import AutoTokenizer

    from ..train import read_meta

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    template = str(getattr(tokenizer, "chat_template", "") or "")
    native = "tools" in template
    try:
        rendered = harness.render(locale, tools_in_prompt=False if native else None)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    warnings = []
    trained_on = (read_meta(checkpoint) or {}).get("harness_hashes") or []
    if trained_on and harness.content_hash not in trained_on:
        warnings.append(f"harness {harness.name} ({harness.short_hash}) is not among the "
                        f"{len(trained_on)} harness versions this checkpoint was trained on")
    prompt_path, tools_path, modelfile_path = companion_paths(out)
    prompt_path.write_text(rendered.system_prompt, encoding="utf-8")
    tools_path.write_text(json.dumps(rendered.tools, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    system = system_message(tokenizer, rendered.system_prompt, rendered.tools if native else [])
    if system is None:
        warnings.append("the chat template is not ChatML: no Ollama Modelfile written (use the "
                        "GGUF's own chat template with llama.cpp)")
        return Companions(prompt_path, tools_path, None, warnings)
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    modelfile_path.write_text(modelfile(out.name, system, harness, tokenizer, config, rendered.locale),
                              encoding="utf-8")
    return Companions(prompt_path, tools_path, modelfile_path, warnings)


def system_message(tokenizer: Any, prompt: str, tools: list[dict[str, Any]]) -> str | None:
    """The system turn's text as the chat template renders it (with its tools section when
    the template has one), or None for a template that is not ChatML."""
    text = str(tokenizer.apply_chat_template([{"role": "system", "content": prompt}],
                                             tools=tools or None, tokenize=False))
    head = f"{START}system\n"
    if not text.startswith(head) or END not in text:
        return None
    return text[len(head):text.index(END)]


def modelfile(gguf_name: str, system: str, harness: Harness, tokenizer: Any,
              config: dict[str, Any], locale: str) -> str:
    if '"""' in system:
        raise ExportError('the system prompt contains """, which an Ollama Modelfile cannot quote')
    settings = harness.spec.model
    stops = dict.fromkeys([str(tokenizer.eos_token or END), END, START, STOP_AFTER_CALL])
    lines = [
        f"# Ollama Modelfile written by `hatkit export gguf`: harness {harness.name} "
        f"({harness.short_hash}), locale {locale}.",
        f"# Tool schemas: {Path(gguf_name).stem}.tools.json (already described in SYSTEM when the",
        "# model was trained with tools in the prompt). Output stops after </tool_call> (the stop",
        "# string is not returned): run the tool, send its result as a role \"tool\" message.",
        f"FROM ./{gguf_name}",
        f'TEMPLATE """{OLLAMA_TEMPLATE}"""',
        f'SYSTEM """{system}"""',
        *(f'PARAMETER stop "{s}"' for s in stops),
        f"PARAMETER temperature {settings.temperature:g}",
        f"PARAMETER top_p {settings.top_p:g}",
        f"PARAMETER num_predict {settings.max_new_tokens}",
        f"PARAMETER num_ctx {min(int(config.get('max_position_embeddings') or 4096), 8192)}",
    ]
    return "\n".join(lines) + "\n"

"""A Hugging Face checkpoint folder -> one GGUF file that llama.cpp and Ollama load.

Written with the `gguf` package the way llama.cpp's `convert_hf_to_gguf.py` writes these
architectures: llama's Q/K rows are permuted into llama.cpp's rope layout (transformers'
GGUF loader undoes exactly this, so packaged GGUF -> hatkit checkpoint -> GGUF gives the
packaged tensors back); the tokenizer goes in as GPT-2 BPE tokens, token types and merges,
with the pre-tokenizer named the way llama.cpp detects it (a hash of a probe text's ids).
Tensors are converted and written one at a time: memory stays near the largest tensor.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any, NamedTuple

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import LlamaFileType as FT

ARCHS: dict[str, tuple[gguf.MODEL_ARCH, bool]] = {
    "llama": (gguf.MODEL_ARCH.LLAMA, True),
    "qwen2": (gguf.MODEL_ARCH.QWEN2, False),
    "qwen3": (gguf.MODEL_ARCH.QWEN3, False),
}
"""config.model_type -> (GGUF architecture, whether Q/K rows are permuted for rope)."""

DTYPES: dict[str, tuple[Q, FT]] = {
    "f32": (Q.F32, FT.ALL_F32), "f16": (Q.F16, FT.MOSTLY_F16),
    "bf16": (Q.BF16, FT.MOSTLY_BF16), "q8_0": (Q.Q8_0, FT.MOSTLY_Q8_0),
}
"""Weight types: norms and biases stay f32, as llama.cpp's converter keeps them."""

# llama.cpp's probe text and the pre-tokenizer names of the hashes of its ids
# (convert_hf_to_gguf.py, get_vocab_base_pre) for the families hatkit trains.
CHKTXT = ('\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis '
          'concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 '
          'កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български '
          '\'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE you '
          'sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL')
PRE_BY_HASH = {
    "855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249": "smollm",
    "d4540891389ea895b53b399da6ac824becc30f2fba0e9ddbb98f92e55ca0e97c": "qwen2",
    "e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea": "qwen2",
    "0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5": "llama-bpe",
    "3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454": "gpt-2",
}


class ExportError(ValueError):
    """The checkpoint cannot be exported; the message says why and what to pass instead."""


@dataclass
class ExportResult:
    path: Path
    arch: str
    dtype: str
    tensors: int
    size: int
    tokenizer_pre: str
    warnings: list[str] = field(default_factory=list)


def export_gguf(checkpoint: str | Path, out: str | Path, dtype: str = "f32",
                progress: Callable[[int, int], None] | None = None) -> ExportResult:
    """Write `checkpoint` (config.json + safetensors + tokenizer) as the GGUF file `out`.
    `progress(bytes_done, bytes_total)` follows the tensor writing. The file is written
    under a temporary name and renamed: an interrupted export leaves no truncated file."""
    folder, out = Path(checkpoint), Path(out)
    if dtype not in DTYPES:
        raise ExportError(f"dtype '{dtype}': choose one of {', '.join(DTYPES)}")
    config = _config(folder)
    arch, permute = ARCHS[config["model_type"]]
    tokenizer = _tokenizer(folder)
    qtype, ftype = DTYPES[dtype]
    heads = config["num_attention_heads"]
    rows = {"q_proj": heads, "k_proj": config.get("num_key_value_heads") or heads} if permute else {}
    warnings: list[str] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    writer = gguf.GGUFWriter(tmp, gguf.MODEL_ARCH_NAMES[arch])
    try:
        with ExitStack() as stack:
            plan = _plan(folder, config, arch, qtype, stack)
            pre = _write_metadata(writer, config, tokenizer, folder, ftype, warnings)
            total = sum(t.nbytes for t in plan)
            for t in plan:
                writer.add_tensor_info(t.name, t.shape, np.dtype(np.float32), t.nbytes,
                                       raw_dtype=t.type)
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_ti_data_to_file()
            done = 0
            for t in plan:
                data = t.handle.get_tensor(t.hf_name).float().numpy()
                proj = t.hf_name.split(".")[-2]
                if proj in rows:  # q_proj / k_proj weight or bias
                    data = permute_qk(data, rows[proj])
                writer.write_tensor_data(_encode(data, t.type))
                done += t.nbytes
                if progress:
                    progress(done, total)
        writer.close()
        tmp.replace(out)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise
    return ExportResult(out, gguf.MODEL_ARCH_NAMES[arch], dtype, len(plan), out.stat().st_size,
                        pre, warnings)


class _Tensor(NamedTuple):
    name: str
    hf_name: str
    handle: Any
    shape: tuple[int, ...]
    type: Q

    @property
    def nbytes(self) -> int:
        block, size = gguf.GGML_QUANT_SIZES[self.type]
        return int(np.prod(self.shape)) // block * size


def _plan(folder: Path, config: dict[str, Any], arch: gguf.MODEL_ARCH, qtype: Q,
          stack: ExitStack) -> list[_Tensor]:
    """Every tensor to write, with its GGUF name and type, from the safetensors headers."""
    names = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    tied = bool(config.get("tie_word_embeddings", False))
    plan = []
    for path, hf_names in _weight_files(folder).items():
        handle = stack.enter_context(_safe_open(path))
        for hf in hf_names:
            if hf.endswith("rotary_emb.inv_freq") or (tied and hf == "lm_head.weight"):
                continue
            name = names.get_name(hf, try_suffixes=(".weight", ".bias"))
            if name is None:
                raise ExportError(f"{path.name}: tensor '{hf}' has no GGUF name for "
                                  f"{config['model_type']} (an unsupported variant?)")
            shape = tuple(handle.get_slice(hf).get_shape())
            plan.append(_Tensor(name, hf, handle, shape, _tensor_type(shape, qtype)))
    if not tied and not any(t.hf_name == "lm_head.weight" for t in plan):
        raise ExportError("no lm_head.weight, and the config does not tie it to the embeddings")
    return plan


def permute_qk(weights: np.ndarray[Any, Any], n_head: int) -> np.ndarray[Any, Any]:
    """HF's rotate-half rope layout -> llama.cpp's interleaved one, per head (the inverse of
    transformers' reverse_permute_weights on GGUF import)."""
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def _config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not path.is_file():
        adapter = " (a LoRA adapter folder: export the stage's final/ folder, which is merged)" \
            if (folder / "adapter_config.json").is_file() else ""
        raise ExportError(f"{folder}: no config.json{adapter}; pass a checkpoint folder such as "
                          "runs/sft/final")
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    model_type = config.get("model_type")
    if model_type not in ARCHS:
        raise ExportError(f"{folder}: model_type '{model_type}' is not exported (supported: "
                          f"{', '.join(ARCHS)}); use llama.cpp's convert_hf_to_gguf.py for it")
    return config


def _tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as exc:
        raise ExportError(f"{folder}: cannot load its tokenizer ({exc})") from None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    spec = json.loads(backend.to_str()) if backend is not None else {}
    decoder = json.dumps(spec.get("decoder"))
    if (spec.get("model") or {}).get("type") != "BPE" or "ByteLevel" not in decoder:
        raise ExportError(f"{folder}: only byte-level BPE tokenizers (GPT-2 style: SmolLM2, "
                          "Qwen, Llama 3) are exported; use llama.cpp's convert_hf_to_gguf.py")
    return tokenizer


def _weight_files(folder: Path) -> dict[Path, list[str]]:
    """safetensors file -> the tensor names it holds (one file, or a sharded index)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        by_file: dict[Path, list[str]] = {}
        for name, file in json.loads(index.read_text())["weight_map"].items():
            by_file.setdefault(folder / file, []).append(name)
        return by_file
    single = folder / "model.safetensors"
    if not single.is_file():
        raise ExportError(f"{folder}: no model.safetensors (or sharded index); save the model "
                          "with save_pretrained(safe_serialization=True)")
    with _safe_open(single) as handle:
        return {single: list(handle.keys())}


def _safe_open(path: Path) -> Any:
    from safetensors import safe_open

    if not path.is_file():
        raise ExportError(f"{path} is missing")
    return safe_open(str(path), framework="pt")


def _tensor_type(shape: tuple[int, ...], want: Q) -> Q:
    """f32 for vectors; `want` for matrices whose rows fill its blocks, else f16 (as
    llama.cpp's converter falls back)."""
    if len(shape) < 2:
        return Q.F32
    return want if shape[-1] % gguf.GGML_QUANT_SIZES[want][0] == 0 else Q.F16


def _encode(data: np.ndarray[Any, Any], ttype: Q) -> np.ndarray[Any, Any]:
    if ttype == Q.F32:
        return data.astype(np.float32, copy=False)
    if ttype == Q.F16:
        return data.astype(np.float16)
    return gguf.quants.quantize(data, ttype)


def _rope(config: dict[str, Any]) -> float:
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    kind = params.get("rope_type") or params.get("type") or "default"
    if kind != "default":
        raise ExportError(f"rope type '{kind}' is not exported; use llama.cpp's converter")
    return float(params.get("rope_theta") or config.get("rope_theta") or 10000.0)


def _write_metadata(w: gguf.GGUFWriter, config: dict[str, Any], tokenizer: Any, folder: Path,
                    ftype: FT, warnings: list[str]) -> str:
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(config.get("_model_name_or_path") or folder.resolve().name)
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(hidden)
    w.add_block_count(config["num_hidden_layers"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(config.get("num_key_value_heads") or heads)
    w.add_rope_freq_base(_rope(config))
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_file_type(ftype)
    w.add_vocab_size(config["vocab_size"])
    w.add_rope_dimension_count(head_dim)
    if head_dim != hidden // heads:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    tokens, types = vocab(tokenizer, config["vocab_size"])
    pre = tokenizer_pre(tokenizer, warnings)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_add_space_prefix(False)
    w.add_token_list(tokens)
    w.add_token_types(types)
    special = gguf.SpecialVocab(folder, load_merges=True, n_vocab=len(tokens))
    special.chat_template = tokenizer.chat_template or special.chat_template
    probe = tokenizer("a")["input_ids"]  # whether the tokenizer itself adds BOS/EOS
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    special.add_special_token["bos"] = bos is not None and probe[0] == bos
    special.add_special_token["eos"] = eos is not None and probe[-1] == eos
    if not special.chat_template:
        warnings.append("the tokenizer has no chat template; llama.cpp will guess one")
    special.add_to_gguf(w, quiet=True)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    return pre


def vocab(tokenizer: Any, size: int) -> tuple[list[str], list[int]]:
    """llama.cpp's token list and types: added special (or special-looking) tokens are
    CONTROL, other added tokens USER_DEFINED, ids the tokenizer lacks `[PAD<id>]` UNUSED."""
    by_id = {i: t for t, i in tokenizer.get_vocab().items()}
    if by_id and max(by_id) >= size:
        raise ExportError(f"the tokenizer has id {max(by_id)} but config vocab_size is {size}")
    added = tokenizer.added_tokens_decoder
    tokens, types = [], []
    for i in range(size):
        token = by_id.get(i)
        if token is None:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        tokens.append(token)
        if i not in added:
            types.append(gguf.TokenType.NORMAL)
        elif added[i].special or _looks_special(token):
            types.append(gguf.TokenType.CONTROL)
        else:
            types.append(gguf.TokenType.USER_DEFINED)
    return tokens, [int(t) for t in types]


def _looks_special(token: str) -> bool:
    return (token in ("<pad>", "<mask>") or (token.startswith("<|") and token.endswith("|>"))
            or (token.startswith("<unused") and token.endswith(">")))


def tokenizer_pre(tokenizer: Any, warnings: list[str]) -> str:
    """llama.cpp's pre-tokenizer name: by the hash of the probe text's ids, as its converter
    does; a plain byte-level pre-tokenizer (the GPT-2 regex) is "gpt-2"."""
    found = PRE_BY_HASH.get(sha256(str(tokenizer.encode(CHKTXT)).encode()).hexdigest())
    if found:
        return found
    pre = json.loads(tokenizer.backend_tokenizer.to_str()).get("pre_tokenizer") or {}
    if pre.get("type") == "ByteLevel" and pre.get("use_regex", True):
        return "gpt-2"
    warnings.append("unknown pre-tokenizer: written as 'default'; llama.cpp may split text "
                    "differently from transformers")
    return "default"


def iter_tensors(path: str | Path) -> Iterator[tuple[str, np.ndarray[Any, Any]]]:
    """(name, float32 array in numpy axis order) of every tensor of a GGUF file,
    dequantised with the `gguf` package: for comparing two files."""
    reader = gguf.GGUFReader(path)
    for t in reader.tensors:
        data = gguf.quants.dequantize(t.data, t.tensor_type)
        yield t.name, np.asarray(data, dtype=np.float32).reshape(tuple(reversed(t.shape.tolist())))

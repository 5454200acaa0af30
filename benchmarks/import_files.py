"""Writes the other tools' result files that the importers are tested on (tests/data/imports/).

Each tool is installed from PyPI into a venv of its own (never into the project's), then run
against a real vLLM server -- the CPU demo server of the README, or any --base-url -- with the
same small load: 2 streams, 8 requests, ~32 prompt tokens, 16 output tokens with ignore_eos.
The files it wrote are copied as they are, next to a README that records the tool versions, the
commands and the machine.

    python benchmarks/import_files.py --base-url http://127.0.0.1:8000/v1 \
        --tokenizer .cache/demo-model-tiny [--venvs /tmp/import-tools]

The tokenizer is the served model's directory (both tools count prompt tokens client-side).
Nothing of the project is imported: what lands in tests/data/imports/ is what the tools wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "imports"
TOOLS = {"guidellm": "guidellm==0.8.1", "aiperf": "aiperf==0.13.0"}


def venv(base: Path, tool: str) -> Path:
    """A venv of the tool's own, with the pinned release (reused when already there)."""
    where = base / tool
    py = where / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", TOOLS[tool]], check=True)
    return where / "bin"


def guidellm(bin_dir: Path, root_url: str, model: str, tokenizer: str, work: Path) -> list[str]:
    out = work / "guidellm-benchmarks.json"
    cmd = [str(bin_dir / "guidellm"), "run",
           "--backend", f"kind=openai_http,target={root_url},model={model}",
           "--profile", "kind=concurrent,streams=2",
           "--constraint", "kind=max_requests,count=8",
           "--data", "kind=synthetic_text,prompt_tokens=32,output_tokens=16",
           "--tokenizer", f"kind=hf_auto,model={tokenizer}",
           "--output", f"kind=json,path={out}", "--disable-console-interactive"]
    subprocess.run(cmd, check=True, timeout=600)
    shutil.copy(out, OUT / out.name)
    return cmd


def aiperf(bin_dir: Path, root_url: str, model: str, tokenizer: str, work: Path) -> list[str]:
    art = work / "aiperf"
    cmd = [str(bin_dir / "aiperf"), "profile", "--model", model, "--url", root_url,
           "--endpoint-type", "chat", "--streaming", "--tokenizer", tokenizer,
           "--concurrency", "2", "--request-count", "8", "--synthetic-input-tokens-mean", "32",
           "--output-tokens-mean", "16", "--extra-inputs", "ignore_eos:true",
           "--export-level", "records", "--output-artifact-dir", str(art), "--ui-type", "none"]
    subprocess.run(cmd, check=True, timeout=600)
    shutil.copy(art / "profile_export.jsonl", OUT / "aiperf-profile_export.jsonl")
    # its configuration (the served model's name; the records carry none)
    shutil.copy(art / "profile_export_aiperf.json", OUT / "aiperf-profile_export_aiperf.json")
    return cmd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True, help="the vLLM server's /v1 URL")
    ap.add_argument("--tokenizer", required=True, help="the served model's directory")
    ap.add_argument("--model", default="Qwen/Qwen3-0.6B", help="served model name")
    ap.add_argument("--server-note", default="", help="what served it (recorded in made.json)")
    ap.add_argument("--venvs", default=str(Path(tempfile.gettempdir()) / "import-tools"))
    args = ap.parse_args()
    root_url = args.base_url.removesuffix("/").removesuffix("/v1")
    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(args.venvs)
    commands, versions = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for tool, run in (("guidellm", guidellm), ("aiperf", aiperf)):
            bin_dir = venv(base, tool)
            versions[tool] = TOOLS[tool].split("==")[1]
            cmd = run(bin_dir, root_url, args.model, str(Path(args.tokenizer).resolve()),
                      Path(tmp))
            commands[tool] = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd))
    made = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "versions": versions,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
            "server": args.server_note, "commands": commands}
    (OUT / "made.json").write_text(json.dumps(made, indent=1) + "\n", "utf-8")
    print(f"wrote {sorted(p.name for p in OUT.iterdir())} to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

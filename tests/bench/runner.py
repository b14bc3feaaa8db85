"""Runs a benchmark script as a user would and returns the one JSON object it prints."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str, out: Path, timeout: float) -> dict:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    [line] = completed.stdout.strip().splitlines()
    result = json.loads(line)
    assert result == json.loads(out.read_text())  # --out writes what stdout shows
    return result

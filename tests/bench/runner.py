"""Runs a benchmark script as a user would and returns the one JSON object it prints."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str, out: Path, timeout: float) -> dict:
    # Past the timeout the script is asked to stop (SIGTERM: it stops the Celery worker it
    # started, which is in a session of its own), then killed with its group: no worker is left
    # behind taking other tests' tasks from Redis.
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / script), *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
        raise
    assert process.returncode == 0, stderr[-2000:]
    [line] = stdout.strip().splitlines()
    result = json.loads(line)
    assert result == json.loads(out.read_text())  # --out writes what stdout shows
    return result

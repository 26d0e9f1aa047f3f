"""The lead's wait, one-shot (issue 51): `codeasst ask QUESTION` as a user runs it, in the current
folder's repository with a warm index, the time to its first byte on stdout and to its end, each
question twice; ask.model as the environment leaves it (the default unless CODEASST_ASK__MODEL is set).

    cd REPO && python /path/to/bench/ask_latency.py [QUESTION ...]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

CLI = str(Path(sys.executable).parent / "codeasst")
QUESTIONS = ["How does codeasst decide which files to index?", "where do I add an endpoint?",
             "How are citations checked?", "What happens when the index is locked?",
             "Where is the static embedder loaded?"]


def main() -> int:
    firsts, totals = [], []
    for question in sys.argv[1:] or QUESTIONS:
        for _ in range(2):
            started = time.perf_counter()
            proc = subprocess.Popen([CLI, "ask", question], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            first = None
            while proc.stdout.read(1):
                first = first or time.perf_counter() - started
            proc.wait()
            total = time.perf_counter() - started
            firsts.append(first or total)
            totals.append(total)
    print(f"first byte p50 {statistics.median(firsts):.2f} s, total p50 {statistics.median(totals):.2f} s "
          f"(n={len(firsts)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The lead's wait, one-shot (issue 51): `codeasst ask QUESTION` as a user runs it, in the current
folder's repository with a warm index, the time to its first byte on stdout and to its end, each
question twice; ask.model as the environment leaves it (the default unless CODEASST_ASK__MODEL is set).
With `--serve`: the same questions through a `codeasst serve` started here, `POST /v1/ask` as an
editor client sends it, the time to the first line of the answer's text in the stream and to its end.

    cd REPO && python /path/to/bench/ask_latency.py [--serve] [QUESTION ...]
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
# Through serve, each question once (a repeated one finds its embedding cached), after these two.
WARM = ["What does codeasst status show?", "How is a completion cancelled?"]
MORE = ["Where is the outline of a definition built?", "How does the background embedder stop?",
        "What does the MCP references tool return?", "Where are registrations found?",
        "How is a fix verified before it is written?"]


def through_serve(questions: list[str]) -> tuple[list[float], list[float]]:
    """Each question once through a server started for this folder's repository (and stopped after)."""
    import json
    import urllib.request

    server = subprocess.Popen([CLI, "serve", "--port", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        info = None
        for _ in range(600):
            done = subprocess.run([CLI, "serve", "--info", "--json"], capture_output=True, text=True, check=False)
            if done.returncode == 0:
                info = json.loads(done.stdout)
                break
            time.sleep(0.5)
        if info is None:
            raise SystemExit("the server did not start")
        firsts, totals = [], []
        for n, question in enumerate([*WARM, *questions]):
            request = urllib.request.Request(info["url"].rstrip("/") + "/v1/ask", method="POST",
                                             data=json.dumps({"question": question}).encode(),
                                             headers={"Authorization": f"Bearer {info['token']}",
                                                      "Content-Type": "application/json"})
            started, first = time.perf_counter(), None
            with urllib.request.urlopen(request, timeout=300) as response:
                for line in response:
                    if first is None and json.loads(line).get("type") == "text":
                        first = time.perf_counter() - started
            total = time.perf_counter() - started
            if n >= len(WARM):  # the first ones warm the server's parts
                firsts.append(first or total)
                totals.append(total)
        return firsts, totals
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> int:
    if "--serve" in sys.argv[1:]:
        firsts, totals = through_serve([q for q in sys.argv[1:] if q != "--serve"] or QUESTIONS + MORE)
        print(f"through serve: first text p50 {statistics.median(firsts):.2f} s, total p50 "
              f"{statistics.median(totals):.2f} s (n={len(firsts)})")
        return 0
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

"""`python -m tests.sigint_default MODULE ARGS...`: run MODULE as `python -m MODULE ARGS...` would, with
SIGINT raising KeyboardInterrupt as a terminal's Ctrl-C does. A shell starts background jobs with
SIGINT ignored and children inherit that, so a test that sends SIGINT means the same however the
suite was started."""

import runpy
import signal
import sys

signal.signal(signal.SIGINT, signal.default_int_handler)
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)

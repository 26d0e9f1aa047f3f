"""`python -m tests.cli.fake_main ARGS...`: codeasst's own entry point, `codeasst.cli.main`, in a
process of its own, with fake models (tests.cli.fakes), for what only a real process shows:
stdout and stderr as pipes, stdin, the exit status."""

from codeasst.cli import main
from tests.cli.fakes import PatientLLM, wire

wire(setattr, PatientLLM())
main()

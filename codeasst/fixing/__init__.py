"""The parts of `codeasst fix`: lint diagnostics, deterministic fixes, model fixes, and the checks
that decide which of them may touch the user's file. The use case itself is codeasst.tasks.fix."""

"""`python -m codeasst.cli`, as the tests and benchmarks run it."""

from codeasst.cli import main

main()

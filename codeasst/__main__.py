"""`python -m codeasst`, the same as the `codeasst` command."""

from codeasst.cli import main

main()

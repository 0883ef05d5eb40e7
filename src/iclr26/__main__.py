"""`python -m iclr26` is the `iclr26` command."""

from iclr26.cli import main

raise SystemExit(main())

"""`python -m kumo` is the `kumo` command."""

from kumo.cli import main

raise SystemExit(main())

"""``python -m localdev.hindsight``: see :mod:`localdev.hindsight.cli`."""

from localdev.hindsight.cli import main

raise SystemExit(main())

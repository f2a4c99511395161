"""``python -m localdev.token_issuer``: see :mod:`localdev.token_issuer.cli`."""

from localdev.token_issuer.cli import main

raise SystemExit(main())

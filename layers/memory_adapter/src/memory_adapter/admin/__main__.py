"""``python -m memory_adapter.admin``: see :mod:`memory_adapter.admin.cli`."""

from memory_adapter.admin.cli import main

raise SystemExit(main())

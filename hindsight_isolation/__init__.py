"""Per-user bank isolation for a stock Hindsight server, through its HTTP, tenant and operation-validator slots.

Hindsight loads :class:`hindsight_isolation.http_extension.RequestGuardExtension` (the request guard in front of every
route), :class:`hindsight_isolation.tenant.IsolationTenantExtension` (authentication) and
:class:`hindsight_isolation.validator.IsolationOperationValidator` (authorization) by module path; see README.md for
the settings. This package's top level imports none of them (they need ``hindsight_api``, which only the server's
virtualenv has), so the pure parts (settings, principal, policy) can be used from the stack and the tests.
"""

from hindsight_isolation.policy import Action, Decision, authorize
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.settings import ConfigError, IsolationSettings, server_env

__all__ = [
    "Action",
    "ConfigError",
    "Decision",
    "IsolationSettings",
    "Kind",
    "Principal",
    "authorize",
    "server_env",
]

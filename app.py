#!/usr/bin/env python3
"""CDK entry point: wiring only.

Stacks, in deploy order (each uses objects of the ones before it)::

    Network ──► Data ──► Identity (cognito/jwt only) ──► MemoryService ──► Agent ──► Gateway (cognito/jwt only)
        ──► Operations
    (hindsight.mode=external: no Data, no MemoryService; an ExternalMemory stack with the isolation probe instead)

    make synth                                   # offline, writes cdk.out/
    npx cdk deploy --all                         # defaults from cdk.json (env=dev, Cognito, new isolated VPC)
    npx cdk deploy --all -c env=prod -c auth.mode=jwt -c auth.discovery_url=https://...

Configuration: cdk.json ``context`` (see docs/deploying.md); ``python -m infra.config`` checks it offline.
"""

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

from infra.app_builder import build_stacks
from infra.config import ConfigError, load_config
from infra.constructs.props import PropsError
from infra.nag import acknowledge_findings

app = App()
try:
    config = load_config(app.node)
    stacks = build_stacks(app, config)
except (ConfigError, PropsError) as err:  # every problem (or what is missing: make build), without a traceback
    raise SystemExit(str(err)) from None
acknowledge_findings(stacks, config)
Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app))
app.synth()

"""Names that come from the CDK bootstrap, derived from the stack's synthesizer (never a hard-coded qualifier)."""

from __future__ import annotations

from aws_cdk import Aws, DefaultStackSynthesizer, Stack


def asset_bucket_name(stack: Stack, *, account: str = Aws.ACCOUNT_ID) -> str:
    """The bootstrap bucket holding this stack's file assets (``cdk-<qualifier>-assets-<account>-<region>``).

    Enterprises often bootstrap with their own qualifier (``@aws-cdk/core:bootstrapQualifier``); the synthesizer
    knows it. ``account`` may be a placeholder, e.g. for matching cdk-nag's rendering of the ARN.
    """
    synthesizer = stack.synthesizer
    if not isinstance(synthesizer, DefaultStackSynthesizer):
        raise TypeError("the stacks use the default synthesizer; a custom one must name its asset bucket itself")
    return (
        DefaultStackSynthesizer.DEFAULT_FILE_ASSETS_BUCKET_NAME.replace(
            "${Qualifier}", synthesizer.bootstrap_qualifier or DefaultStackSynthesizer.DEFAULT_QUALIFIER
        )
        .replace("${AWS::AccountId}", account)
        .replace("${AWS::Region}", stack.region)
    )

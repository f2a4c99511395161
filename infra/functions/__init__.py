"""Small Lambda handlers deployed by the stacks (standard library + boto3 only, no bundling needed)."""

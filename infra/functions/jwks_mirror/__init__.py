"""Copies an OIDC issuer's signing keys into SSM so workloads in a VPC without egress can verify tokens."""

"""Reusable constructs; each takes typed, keyword-only arguments and exposes what others connect to."""

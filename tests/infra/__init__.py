"""Infra tier: CDK synthesis of the tenant stack, asserted offline."""

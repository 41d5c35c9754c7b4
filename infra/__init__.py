"""The engram-memory CDK app (one TenantStack per tenant)."""

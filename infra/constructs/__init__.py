"""Small constructs the TenantStack is composed of."""

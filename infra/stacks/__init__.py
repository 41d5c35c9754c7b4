"""CDK stacks of the engram-memory app."""

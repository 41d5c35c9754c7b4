"""Adapters to AWS (and in-memory fakes). The only code that imports boto3/botocore."""

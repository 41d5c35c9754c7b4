"""The domain core: pure Python, no boto3, no pydantic."""

"""The wire contract: pydantic models, published JSON Schemas, the envelope."""

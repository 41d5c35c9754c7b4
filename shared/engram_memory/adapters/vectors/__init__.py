"""Vector indexes: Amazon S3 Vectors, and the exact in-process top-k used locally."""

"""What every tool handler must import whatever the project does: the stack's floor.

boto3, pydantic's BaseModel, Powertools' Logger, Metrics and Tracer (botocore patched, as
``engram_memory.tracing`` does) and AES-GCM from cryptography. No project module.
"""

from __future__ import annotations

import boto3  # noqa: F401
from aws_lambda_powertools import Logger, Metrics, Tracer
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: F401
from pydantic import BaseModel  # noqa: F401

logger = Logger(service="floor")
metrics = Metrics(service="floor", namespace="Floor")
tracer = Tracer(service="floor", patch_modules=("botocore",))

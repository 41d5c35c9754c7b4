"""A bare pk/sk string-keyed DynamoDB table, for tests of moto's own behaviour."""

from __future__ import annotations

from typing import Any


def create_keyed_table(dynamodb: Any, name: str) -> None:
    """Create ``name`` with a string ``pk`` hash key and a string ``sk`` range key."""
    dynamodb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}])

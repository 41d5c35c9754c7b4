"""Where moto's CloudFormation stores a property in a shape its own service cannot read.

moto keeps an ``AWS::KMS::Key``'s ``KeyPolicy`` as the parsed template object, and its KMS
service then fails every ``DescribeKey`` of that key (it ``json.loads`` the policy). The
policy is put back through the KMS API, from the template's ``KeyPolicy`` resolved against
the stack, as CloudFormation would have set it.

moto's CloudFormation also ignores a table's ``TimeToLiveSpecification``: it is applied
through ``UpdateTimeToLive`` from the template's property (moto never expires items
anyway; the setting is checked by tests/rehearsal/test_stand_up.py).
"""

from __future__ import annotations

import json
from typing import Any

from tests.rehearsal.stand_up import Resolver, StoodUp


def after_stand_up(admin: Any, stood: StoodUp) -> None:
    """Apply the fixes above to the stack just created."""
    resolve = Resolver(admin, stood.region, stood.account, stood.template, stood.physical, {})
    kms = admin.client("kms", region_name=stood.region)
    for lid, resource in stood.resources("AWS::KMS::Key").items():
        policy = resolve(resource["Properties"]["KeyPolicy"])
        kms.put_key_policy(KeyId=stood.physical[lid], PolicyName="default",
                           Policy=json.dumps(policy))
    dynamodb = admin.client("dynamodb", region_name=stood.region)
    for lid, resource in stood.resources("AWS::DynamoDB::Table").items():
        ttl = resource["Properties"].get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(TableName=stood.physical[lid],
                                         TimeToLiveSpecification=ttl)

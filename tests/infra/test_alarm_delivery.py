"""Alarms reach the operator: CloudWatch may publish to the (encrypted, TLS-only) topic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.infra.template_view import as_list, logical_id_of

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra

_CLOUDWATCH = {"Service": "cloudwatch.amazonaws.com"}


def _topic_statements(synthesized: Synthesized) -> tuple[str, list[dict[str, Any]]]:
    resources = synthesized.template["Resources"]
    topic = logical_id_of(resources, "AWS::SNS::Topic", "AlarmTopic")
    (policy,) = [r["Properties"] for r in resources.values()
                 if r["Type"] == "AWS::SNS::TopicPolicy"
                 and r["Properties"]["Topics"] == [{"Ref": topic}]]
    return topic, policy["PolicyDocument"]["Statement"]


def test_cloudwatch_may_publish_this_accounts_alarms_to_the_topic(
        synthesized: Synthesized) -> None:
    topic, statements = _topic_statements(synthesized)
    (allow,) = [s for s in statements if s["Effect"] == "Allow"
                and s.get("Principal") == _CLOUDWATCH]
    assert as_list(allow["Action"]) == ["sns:Publish"]
    assert as_list(allow["Resource"]) == [{"Ref": topic}]
    source_arn = allow["Condition"]["ArnLike"]["aws:SourceArn"]
    parts = source_arn["Fn::Join"][1]
    assert parts[0] == "arn:"
    assert ":cloudwatch:" in parts
    assert {"Ref": "AWS::AccountId"} in parts
    assert parts[-1] == ":alarm:*"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_the_only_deny_is_for_requests_without_tls(synthesized: Synthesized) -> None:
    # The topic policy replaces SNS's default one: a broader Deny would silence alarms.
    _, statements = _topic_statements(synthesized)
    denies = [s for s in statements if s["Effect"] == "Deny"]
    assert denies
    for deny in denies:
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_cloudwatch_may_use_the_key_that_encrypts_the_topic(synthesized: Synthesized) -> None:
    resources = synthesized.template["Resources"]
    topic = logical_id_of(resources, "AWS::SNS::Topic", "AlarmTopic")
    key_ref = resources[topic]["Properties"]["KmsMasterKeyId"]
    key_lid = key_ref["Fn::GetAtt"][0]
    statements = resources[key_lid]["Properties"]["KeyPolicy"]["Statement"]
    granted = {action for s in statements
               if s["Effect"] == "Allow" and s.get("Principal") == _CLOUDWATCH
               for action in as_list(s["Action"])}
    assert {"kms:Decrypt", "kms:GenerateDataKey"} <= granted

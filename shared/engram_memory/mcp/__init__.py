"""The MCP endpoint: tool table, dispatch, host-context verification. No boto3."""

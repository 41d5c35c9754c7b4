"""engram-memory: governed, multi-tenant long-term memory for AI agents over MCP."""

PROVIDER = "sentropic.engram.memory"
CONTRACT_VERSION = "1.0.0"

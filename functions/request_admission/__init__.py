"""The engram_memory_request_admission tool Lambda."""

"""The engram_memory_withdraw tool Lambda."""

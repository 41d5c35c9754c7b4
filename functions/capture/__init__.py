"""The engram_memory_capture tool Lambda."""

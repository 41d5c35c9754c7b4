"""The engram_memory_forget tool Lambda."""

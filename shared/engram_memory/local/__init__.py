"""The one-machine embedded service and its command line."""

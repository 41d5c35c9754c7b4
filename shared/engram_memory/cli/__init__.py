"""The ``engram-memory`` command line: one module per command (see ``main.COMMANDS``)."""

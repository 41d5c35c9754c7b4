"""The confirmation gate: the workflow definition, the host routes and the queue consumer."""

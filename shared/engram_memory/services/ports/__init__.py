"""The ports (Protocols and the value types they carry) the services need, one module per
concern: ``write`` (the store's commit, keys, sealing, the gate, policy, the clock),
``read`` (the projection, search and get), ``semantic`` (embedder and vector index).

Adapters implement them; ``bootstrap`` and ``composition/`` wire concrete ones.
"""

"""The one-machine embedded service (moto, listener, pumps, review page); not shipped."""

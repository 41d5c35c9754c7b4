"""Let go of the DynamoDB items moto keeps for its dashboard (benches only).

Every moto model (``moto.core.common_models.BaseModel``) appends each instance it creates to
its class's ``instances_tracked`` list (``BaseModel.__new__``), so that moto's server
dashboard can list them; only ``mock_aws``'s reset empties the lists. moto's DynamoDB
``Item`` is such a model, and its Query answers with deep copies of the items it read
(``Table.query``: ``copy.deepcopy(results)``, through ``Item.__deepcopy__`` and so
``__new__``), so every page a Query reads stays referenced by ``Item.instances_tracked`` for
as long as the mock runs: a process that pages through 50,000 records on moto ends up holding
all of them, whatever the reader does with each page (2026-12-06: the tracker grew by 250
per 250-item page, shown in bench/results/backup_scale-2026-12-06b.txt). DynamoDB keeps
nothing per request, so ``bench/backup_scale.py`` calls ``clear`` before each phase and after
each request of the commands (``--moto-tracker as-shipped`` leaves the lists alone) to
measure what the commands and the routes hold, not moto's dashboard. Items in moto's tables
stay in its tables: the lists only add a second reference, and moto's DynamoDB code never
reads them (tests/reliability/test_moto_item_tracker.py checks that queries answer the same
after a clear, and that a clear releases the copies).
Never used by the product.
"""

from __future__ import annotations

from moto.core.model_instances import model_data


def _tracked_lists() -> list[list[object]]:
    import moto.dynamodb.models  # noqa: F401  (registers moto's DynamoDB models)

    return [model.instances_tracked  # type: ignore[attr-defined]
            for model in model_data["dynamodb"].values()]


def tracked() -> int:
    """How many DynamoDB model instances moto holds in its dashboard lists."""
    return sum(len(instances) for instances in _tracked_lists())


def clear() -> int:
    """Empty moto's DynamoDB dashboard lists; returns how many references were dropped."""
    dropped = 0
    for instances in _tracked_lists():
        dropped += len(instances)
        instances.clear()
    return dropped

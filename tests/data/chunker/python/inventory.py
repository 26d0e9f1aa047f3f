"""Inventory tracking for the warehouse service."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

DEFAULT_LOCATION = "main"
MAX_STOCK = 10_000


@dataclass
class Item:
    sku: str
    quantity: int = 0
    tags: list[str] = field(default_factory=list)


class Inventory:
    """Keeps item counts per location."""

    def __init__(self, location: str = DEFAULT_LOCATION) -> None:
        self.location = location
        self._items: dict[str, Item] = {}

    def add(self, sku: str, quantity: int = 1) -> Item:
        item = self._items.setdefault(sku, Item(sku))
        if item.quantity + quantity > MAX_STOCK:
            raise ValueError(f"stock limit exceeded for {sku}")
        item.quantity += quantity
        log.debug("added %d of %s", quantity, sku)
        return item

    @property
    def total(self) -> int:
        return sum(item.quantity for item in self._items.values())

    def remove(self, sku: str, quantity: int = 1) -> None:
        item = self._items.get(sku)
        if item is None or item.quantity < quantity:
            raise KeyError(sku)
        item.quantity -= quantity


def merge(a: Inventory, b: Inventory) -> Inventory:
    result = Inventory(a.location)
    for source in (a, b):
        for item in source._items.values():
            result.add(item.sku, item.quantity)
    return result


def report(inventory: Inventory) -> str:
    lines = [f"{sku}: {item.quantity}" for sku, item in sorted(inventory._items.items())]
    return "\n".join(lines)


if __name__ == "__main__":
    inv = Inventory()
    inv.add("apple", 3)
    print(report(inv))

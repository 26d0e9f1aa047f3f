"""Model backends behind small base classes (see base.py)."""

"""Rendering: decoded samples to JSON/text (the fast path and the document writers)."""

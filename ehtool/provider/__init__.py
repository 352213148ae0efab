"""Writing EventHeader events to user_events: the event writer and the JSON-lines batch
writer behind ``ehtool write``."""

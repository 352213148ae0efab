"""``python3 -m ehtool`` (``ehtool/__init__.py`` already made Ctrl-C quiet while it starts)."""

import signal

from ehtool.cli import interrupt, main

signal.signal(signal.SIGINT, interrupt)
main()

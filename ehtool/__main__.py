"""``python3 -m ehtool`` (``ehtool/__init__.py`` already made Ctrl-C quiet while it starts)."""

import signal

from ehtool.cli import interrupt, main

if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # (nohup, a background job)
    signal.signal(signal.SIGINT, interrupt)
main()

"""Fetching current price lists from the providers' public APIs into $GPUCOST_HOME/downloads/.

Fetchers only download (streamed to disk, atomically) and record what they downloaded; the price
adapters in the providers' modules (tasks/providers/) stay the only parsers (tasks/fetch/handoff.py hands
them the files).
"""

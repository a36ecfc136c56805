-- Flush everything into the file (no WAL left beside it) before it is moved into place.
checkpoint published;
detach published;

-- Registry rows of landed files retention removes: the row stays (the same bytes are not ingested again),
-- without a landed file.
update raw.ingested_files set landed_path = null where list_contains($paths, landed_path)

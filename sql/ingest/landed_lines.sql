-- Every line of a landed line-oriented file (CSV, TSV, JSON Lines; zstd) as the file holds it: `line` is 1-based
-- (a CSV's header is line 1), `text` the line without its end (null for an empty line). A core or quarantine
-- row's (content_sha256, source_line) names its line: raw.ingested_files.landed_path says which file.
select row_number() over () as line, text
from read_csv(
        $landed_file, compression = 'zstd', columns = { 'text': 'varchar' }, header = false, delim = chr(0),
        quote = '', escape = '', auto_detect = false
    )
